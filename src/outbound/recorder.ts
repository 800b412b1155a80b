import { CLUSTER_THROTTLE } from '../domain/destinations.js';
import { sandboxSteps } from '../domain/sandbox.js';
import type { OutcomePolicy } from '../domain/transitions.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { isStoreUnavailable } from '../store/errors.js';
import type { DeliveryStore } from '../store/store.js';
import type { DeliveryItem, GroupResult, ItemResult } from './deliver.js';
import { logDeliveries } from './delivery-log.js';
import { holdBack, type Lane } from './lanes.js';
import type { Throttle, ThrottleChange } from './throttle.js';

export interface RecorderDeps {
  store: DeliveryStore;
  clock: Clock;
  log: Logger;
  throttle: Throttle;
  policy: OutcomePolicy;
  /** Called after outcomes (and their events) are committed: the webhook dispatcher can go. */
  onEvents?: () => void;
  /** Counts outcomes (Prometheus), with when the recipient's message was accepted (epoch ms). */
  onOutcome?: (kind: string, acceptedAt: number) => void;
  /** Whose destination throttling is written (scheduler.ts SchedulerDeps.throttleHolder). */
  throttleHolder?: string;
  /** Runs a write in the background (the scheduler's pool waits for it at stop). */
  track: (work: Promise<void>) => void;
  /** The scheduler is stopping: a write the store refused is not tried again. */
  stopping: () => boolean;
}

/** How many outcomes of a connection still sending are written together (`OutcomeRecorder.progress`). */
const RECORD_EVERY = 10;

/**
 * What the scheduler's deliveries came to, written to the store: a group's outcomes in one
 * transaction with what its destination held back, the sandbox's steps, each destination's
 * throttling in the order it changed; every write tried again while the store is away.
 */
export class OutcomeRecorder {
  /** Groups whose first outcomes are written already (`progress`): how many, and the writes. */
  private readonly partly = new WeakMap<GroupResult, { written: number; writes: Promise<void> }>();

  constructor(private readonly deps: RecorderDeps) {}

  /**
   * A connection still sending: its outcomes so far written once RECORD_EVERY have come since the
   * last write, so that a long connection's bounces count toward its customer's reputation (and
   * a pause) while it sends, not once it is done; `record` writes the rest after these.
   */
  progress(group: GroupResult, started: number): void {
    const part = this.partly.get(group) ?? { written: 0, writes: Promise.resolve() };
    if (group.results.length - part.written < RECORD_EVERY) return;
    const results = group.results.slice(part.written);
    part.written = group.results.length;
    part.writes = part.writes.then(() => this.write(results, new Map(), [], started));
    this.partly.set(group, part);
    this.deps.track(part.writes.catch(() => undefined));
  }

  /**
   * One transaction for a whole group: the new states, their events and suppressions, what the
   * destination's refusal held back, and the lane's throttling as it now stands; then one log line
   * per recipient (delivery-log.ts), `started` being when the attempt began.
   */
  async record(group: GroupResult, lane: Lane, change: ThrottleChange, started: number): Promise<void> {
    const { clock, log, throttle } = this.deps;
    const now = clock.now();
    const destination = lane.key;
    let postpone: Array<{ id: number; until: number }> = [];
    if (group.unattempted.length && lane.need) {
      // A source address's lane (outbound/lanes.ts): due again now, so the next claim sends them
      // from an address the destination has not refused, or holds them until the soonest opens.
      postpone = group.unattempted.map((item) => ({ id: item.recipient.id, until: now }));
    } else if (group.unattempted.length) {
      const until = throttle.admit(destination, now);
      postpone = holdBack(throttle, destination, group.unattempted, until.kind === 'paused' ? until.until : now);
    }
    // A paused customer's: due again now, which the claim skips while it is paused.
    for (const item of group.givenBack) postpone.push({ id: item.recipient.id, until: now });
    if (change) this.saveThrottle(change, now);
    const part = this.partly.get(group);
    if (part) await part.writes;
    await this.write(group.results.slice(part?.written ?? 0), group.composed, postpone, started);
    if (group.givenBack.length)
      log.info({ recipients: group.givenBack.length }, 'recipients given back: their customer is paused');
    if (change?.kind === 'set' && group.refusal)
      log.warn(
        {
          destination,
          connections: change.record.connections,
          paused_until: new Date(change.record.pausedUntil).toISOString(),
          code: group.refusal.code,
          reply: group.refusal.message,
        },
        'destination asked us to slow down; throttling it',
      );
    else if (change?.kind === 'cleared') log.info({ destination }, 'destination back to its configured limits');
  }

  /** One transaction: these outcomes with their events, the copies composed, what is held back; then the counts and log lines. */
  private async write(
    results: ItemResult[],
    composed: Map<number, Buffer>,
    postpone: Array<{ id: number; until: number }>,
    started: number,
  ): Promise<void> {
    const now = this.deps.clock.now();
    const rows = results.map(({ item, outcome }) => ({ message: item.message, recipient: item.recipient, outcome }));
    await this.persist(() =>
      this.deps.store.record({ results: rows, composed, postpone, policy: this.deps.policy, now }),
    );
    this.deps.onEvents?.();
    for (const { item, outcome } of results) this.deps.onOutcome?.(outcome.kind, item.message.createdAt);
    logDeliveries(this.deps.log, results, started, now);
  }

  /** Sandbox recipients never open a connection; the simulator domain picks their outcome. */
  async recordSandbox(items: DeliveryItem[]): Promise<void> {
    const { clock, policy } = this.deps;
    const now = clock.now();
    const steps = items.map(({ recipient, message }) => ({
      recipient,
      message,
      steps: sandboxSteps(recipient.address, recipient.attempts),
    }));
    await this.persist(() => this.deps.store.recordSandbox(steps, policy, now));
    this.deps.onEvents?.();
  }

  /** Throttle rows written one at a time in the order the changes were made, so the last one stands (groups finish and commit in any order). */
  private throttleWrites: Promise<void> = Promise.resolve();

  private saveThrottle(change: NonNullable<ThrottleChange>, now: number): void {
    this.throttleWrites = this.throttleWrites
      .then(() => this.deps.store.setThrottle(change, now, this.deps.throttleHolder ?? CLUSTER_THROTTLE))
      .catch((e: unknown) => this.deps.log.warn({ err: e }, 'destination throttle not saved'));
    this.deps.track(this.throttleWrites);
  }

  /**
   * Writes what happened, however long the store is away: the remote servers have spoken, and
   * an outcome not recorded would be sent again once its claim is released. Tried again every
   * second, then every 2, 4… up to 30 s, until it is written or the scheduler stops (then the
   * claims are released at the next start, and the recipients sent again: at least once).
   */
  private async persist(write: () => Promise<void>): Promise<void> {
    for (let wait = 1000; ; wait = Math.min(wait * 2, 30_000)) {
      try {
        return await write();
      } catch (e) {
        if (!isStoreUnavailable(e) || this.deps.stopping()) throw e;
        this.deps.log.warn({ err: e, retry_in_ms: wait }, 'store unavailable: outcomes not recorded yet; trying again');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
