import { CLUSTER_THROTTLE } from '../domain/destinations.js';
import { sandboxSteps } from '../domain/sandbox.js';
import type { OutcomePolicy } from '../domain/transitions.js';
import type { Clock } from '../lib/clock.js';
import { KeyedPool } from '../lib/keyed-pool.js';
import type { Logger } from '../lib/logger.js';
import { isStoreUnavailable } from '../store/errors.js';
import type { DeliveryStore } from '../store/store.js';
import type { DeliveryItem, GroupResult } from './deliver.js';
import { logDeliveries } from './delivery-log.js';
import { SharedLimits } from './shared-limits.js';
import type { Throttle, ThrottleChange } from './throttle.js';

export interface SchedulerDeps {
  store: DeliveryStore;
  clock: Clock;
  log: Logger;
  /** Delivers a group of items at one domain over one connection. */
  deliver: (domain: string, items: DeliveryItem[]) => Promise<GroupResult>;
  /** The destination a domain's mail goes to (domain/destinations.ts); the domain itself when it cannot be told. */
  destinationOf: (domain: string) => Promise<string>;
  /** Per-destination limits and adaptive backoff. */
  throttle: Throttle;
  policy: OutcomePolicy;
  concurrency: number;
  claimBatch: number;
  pollInterval: number;
  worker: string;
  /** Whether this node may claim now (its heartbeat is recent: cluster/node.ts); always, when not given. */
  canClaim?: () => boolean;
  /** outbound.hold: while true nothing new is claimed (in-flight deliveries finish); read at every step so a reload applies. */
  held?: () => boolean;
  /** Called after outcomes (and their events) are committed: the webhook dispatcher can go. */
  onEvents?: () => void;
  /** Counts outcomes (Prometheus), with when the recipient's message was accepted (epoch ms). */
  onOutcome?: (kind: string, acceptedAt: number) => void;
  /**
   * outbound.limits_scope = "cluster": this node's id (unique to the process); each destination's
   * limits are decided against the other nodes' use, shared through the store. Absent: per node.
   */
  sharedAs?: string;
  /**
   * Whose destination throttling this node keeps and reads back at its start: its name (per
   * node, the default: its backoff outlives a restart, other nodes keep theirs), or
   * CLUSTER_THROTTLE with limits_scope = "cluster" (one for all nodes).
   */
  throttleHolder?: string;
}

/** How long a domain's destination is trusted before it is looked up again (the MX cache's time). */
const DESTINATION_TTL_MS = 60_000;
/** Known domains past which old entries are swept. */
const SWEEP_AT = 10_000;

/**
 * Claims due recipients, groups them by recipient domain, and runs deliveries within the global
 * connection limit and each destination's limits (outbound/throttle.ts). What a destination cannot
 * take now (paused, per_minute spent, more waiting than its connections carry in a round) is held
 * back in the store until it can, so it does not fill the claim room other destinations need.
 * Sandbox recipients never reach `deliver`.
 */
export class Scheduler {
  /** Claimed items waiting by recipient domain, and the deliveries (one connection each) running. */
  private readonly pool: KeyedPool<DeliveryItem>;
  /** Each domain's destination, and until when it is trusted; domains being looked up. */
  private readonly destinations = new Map<string, { destination: string; until: number }>();
  private readonly resolving = new Set<string>();
  /** Highest connections seen open at once per destination (read by the tests). */
  readonly peakPerDestination = new Map<string, number>();
  /** limits_scope = "cluster": this node's part in the limits the nodes share; absent per node. */
  private readonly shared?: SharedLimits;

  constructor(private readonly deps: SchedulerDeps) {
    this.pool = new KeyedPool({
      concurrency: deps.concurrency,
      onFinish: () => this.kick(),
      onError: (e, domain) => deps.log.error({ err: e, domain }, 'delivery group failed unexpectedly'),
    });
    if (deps.sharedAs !== undefined)
      this.shared = new SharedLimits(deps.sharedAs, deps, (work) => this.pool.track(work));
  }

  /** New work may be due (a message was accepted): look now rather than at the next poll. */
  kick(): void {
    this.pool.wake();
  }

  /** Runs until the signal aborts; then lets in-flight deliveries finish and releases the rest. */
  async run(signal: AbortSignal): Promise<void> {
    await this.pool.run(
      signal,
      this.deps.pollInterval,
      () => this.fill(),
      (e) => this.deps.log.error({ err: e }, 'scheduler: claim failed; retrying'),
    );
    await this.release();
  }

  /** Claims and delivers everything due now, and waits until it is all recorded (tests, with a manual clock). */
  drain(): Promise<void> {
    return this.pool.drain(() => this.fill());
  }

  /** Stops without `run` (tests): in-flight deliveries finish, the rest is released. */
  async stop(): Promise<void> {
    await this.pool.stop();
    await this.release();
  }

  private async release(): Promise<void> {
    this.unreleased.push(...this.pool.takeAll().map((i) => i.recipient.id));
    await this.releaseLeftOver().catch((e: unknown) =>
      this.deps.log.warn(
        { err: e, claims: this.unreleased.length },
        'claims not released at stop; they are at the next start',
      ),
    );
  }

  /** Claims given back that the store did not take (it was unavailable): tried again before each claim. */
  private unreleased: number[] = [];

  private async releaseLeftOver(): Promise<void> {
    if (this.unreleased.length === 0) return;
    const ids = this.unreleased;
    this.unreleased = [];
    try {
      await this.deps.store.releaseClaims(ids);
    } catch (e) {
      this.unreleased.push(...ids);
      throw e;
    }
  }

  /** Claim → group by domain → start within the limits (holding back what must wait); returns how many were claimed. */
  private async fill(): Promise<number> {
    if (this.pool.stopping || this.deps.held?.() || this.deps.canClaim?.() === false) return 0;
    await this.releaseLeftOver();
    const claimed = await this.claim();
    const held: Array<{ id: number; until: number }> = [];
    if (this.shared) await this.startShared(this.shared, held);
    else
      this.pool.each((domain, list) => {
        const destination = this.destinationOf(domain);
        if (destination !== undefined) held.push(...this.startGroups(domain, destination, list)); // else being looked up; the lookup wakes the loop
      });
    if (held.length)
      await this.deps.store.postpone(held).catch((e: unknown) => {
        // Not held back: the claims are given back instead, and the recipients come due again.
        this.unreleased.push(...held.map((h) => h.id));
        throw e;
      });
    return claimed;
  }

  /**
   * limits_scope = "cluster": per destination with mail waiting, the other nodes' use is read and
   * this node's decisions written in one store transaction that no other node's for the destination
   * interleaves with (a round trip per destination and fill).
   */
  private async startShared(shared: SharedLimits, held: Array<{ id: number; until: number }>): Promise<void> {
    await shared.touch();
    const byDestination = new Map<string, Set<string>>();
    this.pool.each((domain) => {
      const destination = this.destinationOf(domain); // undefined: being looked up; the lookup wakes the loop
      if (destination === undefined) return;
      let domains = byDestination.get(destination);
      if (!domains) byDestination.set(destination, (domains = new Set()));
      domains.add(domain);
    });
    for (const [destination, domains] of byDestination) {
      if (!this.pool.hasRoom) break;
      await shared.decide(destination, () =>
        this.pool.each((domain, list) => {
          if (domains.has(domain)) held.push(...this.startGroups(domain, destination, list));
        }),
      );
    }
  }

  /** Claims due recipients up to the claim batch less what waits; sandbox ones are settled at once, the rest wait by domain. */
  private async claim(): Promise<number> {
    const { store, clock, claimBatch } = this.deps;
    const room = claimBatch - this.pool.waitingCount();
    if (room <= 0) return 0;
    const rows = await store.claim(this.deps.worker, clock.now(), room);
    if (rows.length === 0) return 0;
    const sandbox: DeliveryItem[] = [];
    for (const item of rows) {
      if (item.message.sandbox) sandbox.push(item);
      else this.pool.add(item.recipient.domain, item);
    }
    if (sandbox.length) await this.recordSandbox(sandbox);
    return rows.length;
  }

  /**
   * Starts what the destination's limits allow from one domain's list (taking them out of it);
   * returns what is to be held back in the store, and until when.
   */
  private startGroups(domain: string, destination: string, list: DeliveryItem[]): Array<{ id: number; until: number }> {
    const { throttle, clock } = this.deps;
    const now = clock.now();
    while (list.length > 0 && this.pool.hasRoom) {
      const admission = throttle.admit(destination, now);
      if (admission.kind === 'paused') return this.holdBack(destination, list.splice(0), admission.until);
      if (admission.kind === 'spent') return this.holdBack(destination, list.splice(0), admission.opensAt);
      if (admission.kind === 'full') {
        // Waiting for a connection. A throttled destination keeps one more round of its (fewer)
        // connections here and the rest in the store, so its backlog does not take the claim room
        // other destinations need; at full speed the backlog moves fast enough to wait here.
        const capacity = throttle.capacity(destination);
        return throttle.isThrottled(destination) && list.length > capacity
          ? this.holdBack(destination, list.splice(capacity), throttle.nextRound(destination, now))
          : [];
      }
      this.start(domain, destination, list.splice(0, admission.messages));
    }
    return [];
  }

  /** Until when each of `items` is held back in the store: none before `from`, spread at the pace the destination takes mail. */
  private holdBack(destination: string, items: DeliveryItem[], from: number): Array<{ id: number; until: number }> {
    const at = this.deps.throttle.slots(destination, items.length, from);
    return items.map((it, i) => ({ id: it.recipient.id, until: at[i]! }));
  }

  /** A domain's destination if known (refreshed in the background when old); undefined while it is first looked up. */
  private destinationOf(domain: string): string | undefined {
    const known = this.destinations.get(domain);
    if (known && known.until > this.deps.clock.now()) return known.destination;
    if (!this.resolving.has(domain)) {
      this.resolving.add(domain);
      this.pool.track(
        this.deps
          .destinationOf(domain)
          .catch(() => domain)
          .then((destination) => {
            const now = this.deps.clock.now();
            this.destinations.set(domain, { destination, until: now + DESTINATION_TTL_MS });
            if (this.destinations.size > SWEEP_AT) this.sweep(now);
          })
          .finally(() => {
            this.resolving.delete(domain);
            this.kick();
          }),
      );
    }
    return known?.destination;
  }

  /** Forgets what is old: domains' destinations past their time, destinations with nothing going on (memory stays bounded however many domains are sent to). */
  private sweep(now: number): void {
    for (const [domain, known] of this.destinations) if (known.until <= now) this.destinations.delete(domain);
    this.deps.throttle.forgetIdle(now);
    for (const destination of this.peakPerDestination.keys())
      if (this.deps.throttle.openConnections(destination) === 0) this.peakPerDestination.delete(destination);
  }

  /** One connection's delivery: the throttle is told when it opens and how it went; the outcomes are recorded together. */
  private start(domain: string, destination: string, items: DeliveryItem[]): void {
    const { throttle, clock } = this.deps;
    const ticket = throttle.open(destination, clock.now(), items.length);
    this.peakPerDestination.set(
      destination,
      Math.max(throttle.openConnections(destination), this.peakPerDestination.get(destination) ?? 0),
    );
    this.pool.start(domain, async () => {
      let closed = false;
      const started = clock.now();
      try {
        const group = await this.deps.deliver(domain, items);
        const delivered = group.results.filter((r) => r.outcome.kind === 'delivered').length;
        const change = throttle.close(ticket, { delivered, refusal: group.refusal }, clock.now());
        closed = true;
        this.shared?.publishUse(destination);
        await this.record(group, destination, change, started);
      } catch (e) {
        // A bug: the claims are released and the recipients tried again later.
        this.deps.log.error({ err: e, domain }, 'delivery group failed; releasing its claims');
        this.unreleased.push(...items.map((i) => i.recipient.id));
        await this.releaseLeftOver().catch(() => undefined);
        if (!closed) {
          throttle.close(ticket, { delivered: 0, refusal: null }, clock.now());
          this.shared?.publishUse(destination);
        }
      }
    });
  }

  /**
   * One transaction for a whole group: the new states, their events and suppressions, what the
   * destination's refusal held back, and the destination's throttling as it now stands; then one
   * log line per recipient (delivery-log.ts), `started` being when the attempt began.
   */
  private async record(
    group: GroupResult,
    destination: string,
    change: ThrottleChange,
    started: number,
  ): Promise<void> {
    const { clock, policy, log, throttle } = this.deps;
    const now = clock.now();
    let postpone: Array<{ id: number; until: number }> = [];
    if (group.unattempted.length) {
      const until = throttle.admit(destination, now);
      postpone = this.holdBack(destination, group.unattempted, until.kind === 'paused' ? until.until : now);
    }
    if (change) this.saveThrottle(change, now);
    await this.persist(() =>
      this.deps.store.record({
        results: group.results.map(({ item, outcome }) => ({
          message: item.message,
          recipient: item.recipient,
          outcome,
        })),
        composed: group.composed,
        postpone,
        policy,
        now,
      }),
    );
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
    this.deps.onEvents?.();
    for (const { item, outcome } of group.results) this.deps.onOutcome?.(outcome.kind, item.message.createdAt);
    logDeliveries(log, group.results, started, now);
  }

  /** Sandbox recipients never open a connection; the simulator domain picks their outcome. */
  private async recordSandbox(items: DeliveryItem[]): Promise<void> {
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
    this.pool.track(this.throttleWrites);
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
        if (!isStoreUnavailable(e) || this.pool.stopping) throw e;
        this.deps.log.warn({ err: e, retry_in_ms: wait }, 'store unavailable: outcomes not recorded yet; trying again');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
