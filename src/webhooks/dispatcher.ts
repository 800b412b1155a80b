import type { Db } from '../store/db.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { claimDeliveries, enabledEndpointIds, fanOut, unlockDeliveries, getEndpoint, recordAttempts, settleDelivery, type AttemptRecord, type ClaimRoom, type ClaimedDelivery, type Endpoint, type SettledAttempt } from '../store/webhooks.js';
import { WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_MS, ok2xx, type WebhookService } from './service.js';
import type { PostResult } from './safe-fetch.js';
import { PollLoop } from '../lib/poll-loop.js';

export interface DispatcherDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  service: WebhookService;
  worker: string;
  /** Requests in flight, all endpoints together. */
  concurrency: number;
  /** Requests in flight to one endpoint. */
  perEndpoint: number;
  pollInterval: number;
  /**
   * Deliveries claimed ahead per endpoint (in memory with their events, locked in the store);
   * an endpoint whose last attempt failed gets 2 x perEndpoint at most.
   */
  claimPerEndpoint?: number;
  /** Deliveries claimed ahead, all endpoints together. */
  claimTotal?: number;
  /** Finished attempts are recorded together, at the latest after this long (ms). */
  flushInterval?: number;
  /** Counts attempts by outcome (Prometheus). */
  onAttempt?: (outcome: 'success' | 'failure' | 'gone') => void;
  /**
   * Commits a batch of finished attempts. The daemon passes the group-commit writer, so the
   * fsync happens off the event loop that is sending the next requests; by default it is a
   * transaction on `db`.
   */
  record?: (batch: SettledAttempt[], now: number) => Promise<void>;
}

/** Attempts recorded per transaction at most; a batch this full is written at once. */
const FLUSH_BATCH = 256;
/**
 * Claimed ahead per endpoint, and in all. A fill costs a transaction on the event loop, so the
 * quota is large for an endpoint that keeps up (bench webhooks: 1,024 took 5-10 % less of the
 * daemon's CPU than 256); the total bounds the event bodies held in memory (~1 KiB each).
 */
const CLAIM_PER_ENDPOINT = 1024;
const CLAIM_TOTAL = 16_384;
/** Events fanned out per fill, at least and at most. */
const FANOUT_MIN = 64;
const FANOUT_MAX = 1000;

interface Settled {
  d: ClaimedDelivery;
  attempt: AttemptRecord;
  result: PostResult;
}

/**
 * Delivers the outbox: fans events out to subscribed endpoints, claims due deliveries in batches
 * (a quota per endpoint), sends at most `perEndpoint` at once to each endpoint (one slow or dead
 * endpoint cannot hold up the others), and records attempts, retries and final states in grouped
 * transactions.
 */
export class Dispatcher {
  private backlog = new Map<string, ClaimedDelivery[]>();
  private active = 0;
  private inFlight = new Set<Promise<void>>();
  private perEndpoint = new Map<string, number>();
  private settled: Settled[] = [];
  private readonly loop = new PollLoop();
  private stopped = false;
  private flushTimer: NodeJS.Timeout | null = null;
  /** Endpoints as of the last claim: enabled state and secret changes are seen from the next claim on. */
  private endpoints = new Map<string, Endpoint | undefined>();

  constructor(private readonly deps: DispatcherDeps) {}

  private kickTimer: NodeJS.Timeout | null = null;

  /** New events: look soon. Kicks within 10 ms are coalesced, so a burst of events is fanned out together. */
  kick(): void {
    if (this.kickTimer) return;
    this.kickTimer = setTimeout(() => {
      this.kickTimer = null;
      this.loop.wake();
    }, 10);
  }

  async run(signal: AbortSignal): Promise<void> {
    await this.loop.run(signal, this.deps.pollInterval, () => this.fill(), (e) => this.deps.log.error({ err: e }, 'webhooks: claim failed; retrying'));
    this.stopped = true;
    if (this.kickTimer) clearTimeout(this.kickTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await Promise.all(this.inFlight);
    await this.flush();
    await Promise.all(this.flushing);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.releaseBacklog();
  }

  /** Delivers everything due now and waits for it (tests, with a manual clock). */
  async drain(): Promise<void> {
    for (;;) {
      const started = this.fill(true);
      if (started === 0 && this.inFlight.size === 0) {
        await this.flush();
        await Promise.all(this.flushing);
        if (this.fill(true) === 0 && this.inFlight.size === 0) return;
      }
      if (this.inFlight.size > 0) await Promise.race(this.inFlight);
    }
  }

  /**
   * Endpoints whose last attempt (in this process) succeeded. The others (new, failing, hanging)
   * are claimed for a few at a time, so a dead endpoint cannot take the whole claim total.
   */
  private healthy = new Set<string>();

  private quota(endpoint: string): number {
    const quota = this.deps.claimPerEndpoint ?? CLAIM_PER_ENDPOINT;
    return this.healthy.has(endpoint) ? quota : Math.min(quota, 2 * this.deps.perEndpoint);
  }

  /** Backlog beyond the quota of an endpoint that has just failed: taken back, to be unlocked. */
  private overQuota(): ClaimedDelivery[] {
    const out: ClaimedDelivery[] = [];
    for (const [e, list] of this.backlog) {
      const excess = list.length - this.quota(e);
      if (excess > 0) out.push(...list.splice(list.length - excess));
    }
    return out;
  }

  /**
   * What may be claimed now: each endpoint up to its quota, less what it holds (backlog and in
   * flight), and all together up to claimTotal (the backlog keeps each event's body in memory).
   */
  private claimRoom(): ClaimRoom {
    const held = new Map<string, number>();
    let total = 0;
    for (const [e, list] of this.backlog) held.set(e, list.length);
    for (const [e, n] of this.perEndpoint) held.set(e, (held.get(e) ?? 0) + n);
    for (const n of held.values()) total += n;
    let free = Math.max(0, (this.deps.claimTotal ?? CLAIM_TOTAL) - total);
    return {
      room: (e) => Math.min(free, Math.max(0, this.quota(e) - (held.get(e) ?? 0))),
      take: (e) => {
        held.set(e, (held.get(e) ?? 0) + 1);
        free--;
      },
    };
  }

  /**
   * Claims due deliveries for each endpoint below its quota, then fans new events out, creating
   * their deliveries already claimed where an endpoint has room; starts what the limits allow and
   * returns how many started.
   */
  private fill(wait = false): number {
    if (this.stopped) return 0;
    const { db, clock, worker } = this.deps;
    // On the event loop's own connection, in one transaction that is only tried: while the
    // writer thread commits attempts it holds the write lock, and waiting for it would block
    // this event loop in SQLite's busy handler (at least 1 ms a time; 13 % of the event loop's
    // time in bench webhooks). Then the fill is tried again on the next attempt's completion,
    // or in a millisecond.
    // Room is counted per endpoint, so an endpoint that hangs with a full backlog does not stop
    // the claims of the others. Due rows first: retries, and rows fanned out while their endpoint
    // was full, come before new events. New events then, as many as the emptiest endpoint has
    // room for (at least FANOUT_MIN, so events of endpoints that are all full still get their
    // pending rows): most deliveries are created claimed, which saves claiming them.
    this.endpoints.clear();
    const release = this.overQuota();
    const room = this.claimRoom();
    const now = clock.now();
    const taken: ClaimedDelivery[] = [];
    const work = (): void => {
      unlockDeliveries(db, release.map((d) => d.id));
      taken.push(...claimDeliveries(db, worker, now, room));
      let most = 0;
      for (const id of enabledEndpointIds(db)) most = Math.max(most, room.room(id));
      fanOut(db, now, Math.min(FANOUT_MAX, Math.max(FANOUT_MIN, most)), { worker, room, into: taken });
    };
    let done = false;
    try {
      if (wait) done = db.tx(() => (work(), true));
      else done = db.tryTx(work) !== undefined;
    } finally {
      // Not written: what was taken back from the backlog is still locked; it goes back.
      if (!done) for (const d of release) this.enqueue(d);
    }
    if (!done) this.retrySoon();
    for (const d of taken) this.enqueue(d);
    return this.dispatch();
  }

  private enqueue(d: ClaimedDelivery): void {
    const list = this.backlog.get(d.endpointId);
    if (list) list.push(d);
    else this.backlog.set(d.endpointId, [d]);
  }

  private retryTimer: NodeJS.Timeout | null = null;

  /** The store was busy: fill again in a millisecond (sooner if an attempt completes first). */
  private retrySoon(): void {
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = null;
      this.refill(null);
    }, 1);
  }

  /** Starts claimed deliveries within the limits; no store access. */
  private dispatch(): number {
    // Stopping: an attempt finishing now must not start the next one (run() is waiting for the
    // attempts in flight; what stays in the backlog is released).
    if (this.stopped) return 0;
    const { concurrency, perEndpoint } = this.deps;
    let started = 0;
    for (const [endpoint, list] of this.backlog) {
      while (list.length > 0 && this.active < concurrency && (this.perEndpoint.get(endpoint) ?? 0) < perEndpoint) {
        this.start(list.shift()!);
        started++;
      }
      if (list.length === 0) this.backlog.delete(endpoint);
    }
    return started;
  }

  /** After an attempt to `endpoint`: go on from memory; claim again (once per turn) only when its backlog runs low. */
  private refill(endpoint: string | null): void {
    this.dispatch();
    if (this.refillScheduled || this.stopped || (endpoint !== null && (this.backlog.get(endpoint)?.length ?? 0) >= this.quota(endpoint) / 2)) return;
    this.refillScheduled = true;
    setImmediate(() => {
      this.refillScheduled = false;
      try {
        this.fill();
      } catch (e) {
        this.deps.log.error({ err: e }, 'webhooks: claim failed; retrying');
      }
    });
  }

  private refillScheduled = false;

  private start(d: ClaimedDelivery): void {
    this.active++;
    this.perEndpoint.set(d.endpointId, (this.perEndpoint.get(d.endpointId) ?? 0) + 1);
    const p = this.attempt(d)
      .catch((e: unknown) => this.deps.log.error({ err: e, delivery: d.id }, 'webhook attempt failed unexpectedly'))
      .finally(() => {
        this.active--;
        this.perEndpoint.set(d.endpointId, (this.perEndpoint.get(d.endpointId) ?? 1) - 1);
        this.inFlight.delete(p);
        this.refill(d.endpointId);
      });
    this.inFlight.add(p);
  }

  private endpoint(id: string): Endpoint | undefined {
    if (!this.endpoints.has(id)) this.endpoints.set(id, getEndpoint(this.deps.db, id));
    return this.endpoints.get(id);
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const { db, clock, service } = this.deps;
    const endpoint = this.endpoint(d.endpointId);
    if (!endpoint || !endpoint.enabled) {
      settleDelivery(db, d.id, 'failed', d.attempts, null, clock.now());
      return;
    }
    const at = clock.now();
    const result = await service.send(endpoint, d.event.id, d.event.body);
    this.settled.push({
      d,
      result,
      attempt: { endpointId: endpoint.id, deliveryId: d.id, eventId: d.event.id, eventType: d.event.type, attempt: d.attempts + 1, at, status: result.status, error: result.error, durationMs: result.durationMs, response: result.response },
    });
    // Webhooks are at-least-once and receivers dedupe on webhook-id: recording an attempt a few
    // milliseconds later (so many share one commit) risks at worst a duplicate after a crash.
    if (result.status === 410) this.endpoints.set(endpoint.id, { ...endpoint, enabled: false });
    if (ok2xx(result)) this.healthy.add(endpoint.id);
    else this.healthy.delete(endpoint.id);
    if (this.settled.length >= FLUSH_BATCH) void this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), this.deps.flushInterval ?? 25);
  }

  private readonly flushing = new Set<Promise<void>>();

  /** Records the finished attempts so far in one transaction (through `record`). */
  private flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.settled.length === 0) return Promise.resolve();
    const batch = this.settled;
    this.settled = [];
    const { db, clock, log } = this.deps;
    const now = clock.now();
    const records: SettledAttempt[] = batch.map(({ d, attempt, result }) => {
      const gone = result.status === 410;
      const state = ok2xx(result) ? 'succeeded' : gone || attempt.attempt >= WEBHOOK_MAX_ATTEMPTS ? 'failed' : 'pending';
      return { attempt, deliveryId: d.id, state, nextAt: state === 'pending' ? now + WEBHOOK_RETRY_MS[attempt.attempt - 1]! : null, disableEndpoint: gone };
    });
    const record = this.deps.record ?? ((b: SettledAttempt[], at: number) => Promise.resolve(db.tx(() => recordAttempts(db, b, at))));
    const p = record(records, now)
      .then(() => {
        for (const { result } of batch) this.deps.onAttempt?.(ok2xx(result) ? 'success' : result.status === 410 ? 'gone' : 'failure');
        for (const { attempt } of batch)
          if (!attempt.status || attempt.status >= 300)
            log.info({ endpoint: attempt.endpointId, event_id: attempt.eventId, type: attempt.eventType, attempt: attempt.attempt, status: attempt.status, error: attempt.error }, 'webhook attempt failed');
      })
      .catch((e: unknown) => {
        // The store cannot write (disk full): keep the outcomes and try again with the next batch.
        log.error({ err: e, attempts: batch.length }, 'webhooks: recording attempts failed; will retry');
        this.settled.unshift(...batch);
        this.flushTimer ??= setTimeout(() => void this.flush(), 1000).unref();
      })
      .finally(() => this.flushing.delete(p));
    this.flushing.add(p);
    return p;
  }

  private releaseBacklog(): void {
    const ids = [...this.backlog.values()].flat().map((d) => d.id);
    this.backlog.clear();
    this.deps.db.tx(() => unlockDeliveries(this.deps.db, ids));
  }
}
