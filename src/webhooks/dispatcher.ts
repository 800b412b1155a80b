import type { Clock } from '../lib/clock.js';
import { KeyedPool } from '../lib/keyed-pool.js';
import type { Logger } from '../lib/logger.js';
import type { AttemptBatch, ClaimedDelivery, Endpoint, StoredDelivery } from '../store/model.js';
import type { WebhookStore } from '../store/store.js';
import { AttemptLog } from './attempt-log.js';
import { FanOut } from './fanout.js';
import { CLAIM_PER_ENDPOINT, CLAIM_TOTAL, Quotas } from './quotas.js';
import type { PostResult } from './safe-fetch.js';
import { attemptRecord, ok2xx, WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_MS, type WebhookService } from './service.js';

export interface DispatcherDeps {
  store: WebhookStore;
  clock: Clock;
  log: Logger;
  service: WebhookService;
  worker: string;
  /** Whether this node may claim now (its heartbeat is recent: cluster/node.ts); always, when not given. While not, what it holds goes on and nothing new is taken. */
  canClaim?: () => boolean;
  /** Requests in flight, all endpoints together. */
  concurrency: number;
  /** Requests in flight to one endpoint. */
  perEndpoint: number;
  pollInterval: number;
  /**
   * Deliveries claimed ahead per endpoint (in memory with their events, locked in the store);
   * an endpoint whose last attempt failed gets 2 x perEndpoint at most (quotas.ts).
   */
  claimPerEndpoint?: number;
  /** Deliveries claimed ahead, all endpoints together. */
  claimTotal?: number;
  /** Finished attempts are recorded together, at the latest after this long (ms). */
  flushInterval?: number;
  /** Counts attempts by outcome (Prometheus). */
  onAttempt?: (outcome: 'success' | 'failure' | 'gone', durationMs: number) => void;
  /**
   * Commits a batch of finished attempts (with the rows of deliveries fanned out in memory and
   * the fan-out cursor); by default the store's recordAttempts (on SQLite, through the writer
   * thread when the daemon has one, so the fsync is off the event loop sending the next requests).
   */
  record?: (input: AttemptBatch) => Promise<boolean>;
  /**
   * The fan-out's lease (several nodes on one database fan out one at a time): held by `holder`,
   * unique to this process, renewed every third of `ttlMs`. Without it, this dispatcher fans out
   * as the only one.
   */
  fanOutLease?: { holder: string; ttlMs: number; askEveryMs?: number };
}

/** Events fanned out per fill at most. */
const FANOUT_MAX = 1000;

/**
 * Delivers the outbox. Each fill: give back what a failing endpoint holds over its quota, claim due
 * delivery rows (retries, and deliveries parked pending while their endpoint was full) within each
 * endpoint's room, fan new events out in memory within the room left, and start attempts, at most
 * `perEndpoint` at once to each endpoint (one slow or dead endpoint cannot hold up the others).
 * Finished attempts go to the batched attempt log. The parts: the runner (lib/keyed-pool.ts), the
 * fan-out and its crash-recovery cursor (fanout.ts), quotas and health (quotas.ts), the attempt
 * log (attempt-log.ts).
 *
 * So the usual delivery costs one insert (its row, written with its first attempt's record) and no
 * transaction on the event loop.
 */
export class Dispatcher {
  /** Deliveries held by endpoint, and the attempts running. */
  private readonly pool: KeyedPool<ClaimedDelivery>;
  private readonly quotas: Quotas;
  private readonly fanOut: FanOut;
  private readonly attempts: AttemptLog;
  /** Endpoints as of the last fill: enabled state and secret changes are seen from the next fill on. */
  private readonly endpoints = new Map<string, Endpoint | undefined>();
  /** Pending kick (coalesces a burst of events), store-busy retry, and a refill due this turn. */
  private kickTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private refillScheduled = false;

  constructor(private readonly deps: DispatcherDeps) {
    const { store, log } = deps;
    this.pool = new KeyedPool({
      concurrency: deps.concurrency,
      onFinish: (endpoint) => this.refill(endpoint),
      onError: (e, endpoint) => log.error({ err: e, endpoint }, 'webhook attempt failed unexpectedly'),
    });
    this.quotas = new Quotas({
      perEndpoint: deps.perEndpoint,
      claimPerEndpoint: deps.claimPerEndpoint ?? CLAIM_PER_ENDPOINT,
      claimTotal: deps.claimTotal ?? CLAIM_TOTAL,
    });
    this.fanOut = new FanOut(
      store,
      () => this.attempts.schedule(),
      deps.fanOutLease ? { ...deps.fanOutLease, onDeposed: () => this.dropFresh() } : undefined,
    );
    this.attempts = new AttemptLog({
      clock: deps.clock,
      log,
      fanOut: this.fanOut,
      record: deps.record ?? ((input: AttemptBatch) => store.recordAttempts(input)),
      flushInterval: deps.flushInterval ?? 25,
      ...(deps.onAttempt ? { onAttempt: deps.onAttempt } : {}),
    });
  }

  /** New events: look soon. Kicks within 10 ms are coalesced, so a burst of events is fanned out together. */
  kick(): void {
    if (this.kickTimer) return;
    this.kickTimer = setTimeout(() => {
      this.kickTimer = null;
      this.pool.wake();
    }, 10);
  }

  /**
   * New events were committed (on this node or, told by a wakeup, on another): only the fan-out
   * lease's holder (or a node about to ask for it) has anything to do with them, so the others do
   * not look (no read for nothing at every commit of every node). Stored deliveries come due by
   * time, and are found by the poll.
   */
  kickForEvents(): void {
    if (this.fanOut.wantsEvents()) this.kick();
  }

  async run(signal: AbortSignal): Promise<void> {
    await this.pool.run(
      signal,
      this.deps.pollInterval,
      () => this.fill(),
      (e) => this.deps.log.error({ err: e }, 'webhooks: claim failed; retrying'),
    );
    if (this.kickTimer) clearTimeout(this.kickTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.attempts.settle();
    this.attempts.stop();
    await this.fanOut
      .resign()
      .catch((e: unknown) =>
        this.deps.log.warn({ err: e }, 'webhooks: fan-out lease not given up at stop; it runs out by itself'),
      );
    // Rows held are unlocked; fresh deliveries need nothing (the cursor is before them).
    const ids = this.pool
      .takeAll()
      .filter((d): d is StoredDelivery => d.kind === 'stored')
      .map((d) => d.id);
    await this.deps.store.unlock(ids);
  }

  /** Without `run` (tests driving `drain`): what is finished is recorded and the fan-out's lease given up, as at the end of `run`. */
  async resign(): Promise<void> {
    await this.attempts.settle();
    await this.fanOut
      .resign()
      .catch((e: unknown) =>
        this.deps.log.warn({ err: e }, 'webhooks: fan-out lease not given up at stop; it runs out by itself'),
      );
  }

  /** Delivers everything due now and waits for it and its record (tests, with a manual clock). */
  drain(): Promise<void> {
    return this.pool.drain(
      () => this.fill(true),
      () => this.attempts.settle(),
    );
  }

  /** Deliveries an endpoint holds: waiting in memory and in flight (tests, metrics). */
  held(endpointId: string): number {
    return this.pool.waitingFor(endpointId) + this.pool.runningFor(endpointId);
  }

  /**
   * Claims due delivery rows for each endpoint below its quota, then fans new events out in memory
   * within the room left; starts what the limits allow and returns how many started.
   *
   * Only claims write (locks), and only when a read finds rows due: on the event loop's own
   * connection, in a transaction that is only tried, because waiting for the writer thread's
   * lock would block this event loop in SQLite's busy handler (at least 1 ms a time; a lock held
   * elsewhere blocked it up to busy_timeout). Then it is tried again on the next attempt's
   * completion, or in a millisecond.
   */
  private async fill(wait = false): Promise<number> {
    if (this.pool.stopping) return 0;
    if (this.deps.canClaim?.() === false) return this.dispatch();
    const { store, clock, worker } = this.deps;
    this.endpoints.clear();
    const now = clock.now();
    const release = this.overQuota();
    const room = this.quotas.room((e) => this.held(e), this.pool.running + this.pool.waitingCount());
    const enabled = await store.enabledEndpointIds();
    if (
      release.length > 0 ||
      (await store.hasDue(
        enabled.filter((e) => room.room(e) > 0),
        now,
      ))
    ) {
      let taken: StoredDelivery[] | undefined;
      try {
        taken = await store.claim(
          worker,
          now,
          room,
          release.map((d) => d.id),
          wait,
        );
      } finally {
        // Not written: what was taken back is still locked; it goes back.
        if (!taken) for (const d of release) this.pool.add(d.endpointId, d);
      }
      // Busy: the due rows wait for the retry; new events need no lock and go on meanwhile.
      if (!taken) this.retrySoon();
      else for (const d of taken) this.pool.add(d.endpointId, d);
    }
    // As many new events as the emptiest endpoint has room for: with every endpoint full, they
    // wait in the outbox (fanning them out would only write pending rows to claim later). With no
    // endpoint at all, the cursor still moves on.
    let most = enabled.length === 0 ? FANOUT_MAX : 0;
    for (const id of enabled) most = Math.max(most, room.room(id));
    // Only the node holding the fan-out's lease fans out; every node claims stored rows.
    if ((await this.fanOut.lead()) && most > 0)
      for (const { delivery, endpoint } of await this.fanOut.next(Math.min(FANOUT_MAX, most), room)) {
        this.endpoints.set(endpoint.id, endpoint);
        this.pool.add(endpoint.id, delivery);
      }
    return this.dispatch();
  }

  /**
   * What endpoints that have just failed hold beyond their quota, taken back: rows to unlock
   * (returned), fresh deliveries parked to be written pending with the next batch.
   */
  private overQuota(): StoredDelivery[] {
    const rows: StoredDelivery[] = [];
    this.pool.each((endpoint, list) => {
      const excess = this.quotas.excess(endpoint, list.length);
      for (const d of list.splice(list.length - excess, excess)) {
        if (d.kind === 'stored') rows.push(d);
        else this.fanOut.park(d);
      }
    });
    return rows;
  }

  /** The fan-out went to another node: fresh deliveries held here and not started are its to fan out again. */
  private dropFresh(): void {
    this.pool.each((_endpoint, list) => {
      for (let i = list.length - 1; i >= 0; i--) if (list[i]!.kind === 'fresh') list.splice(i, 1);
    });
  }

  /** The store was busy: fill again in a millisecond (sooner if an attempt completes first). */
  private retrySoon(): void {
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = null;
      this.refill(null);
    }, 1);
  }

  /** Starts held deliveries within the limits; no store access. Stopping, nothing starts. */
  private dispatch(): number {
    const { perEndpoint } = this.deps;
    let started = 0;
    this.pool.each((endpoint, list) => {
      while (list.length > 0 && this.pool.hasRoom && this.pool.runningFor(endpoint) < perEndpoint) {
        const d = list.shift()!;
        this.pool.start(endpoint, () => this.attempt(d));
        started++;
      }
    });
    return started;
  }

  /** After an attempt to `endpoint`: go on from memory; fill again (once per turn) only when its held deliveries run low. */
  private refill(endpoint: string | null): void {
    this.dispatch();
    if (
      this.refillScheduled ||
      this.pool.stopping ||
      (endpoint !== null && this.pool.waitingFor(endpoint) >= this.quotas.quota(endpoint) / 2)
    )
      return;
    this.refillScheduled = true;
    setImmediate(() => {
      this.refillScheduled = false;
      this.pool
        .exclusive(() => this.fill())
        .catch((e: unknown) => this.deps.log.error({ err: e }, 'webhooks: claim failed; retrying'));
    });
  }

  private async endpoint(id: string): Promise<Endpoint | undefined> {
    if (!this.endpoints.has(id)) this.endpoints.set(id, await this.deps.store.getEndpoint(id));
    return this.endpoints.get(id);
  }

  /**
   * One attempt: its outcome goes to the attempt log. A store error on the way (a read of the
   * endpoint, a write for a disabled one) rejects; the pool logs it. A fresh delivery whose
   * endpoint could not be read is parked first: it exists only in memory, and the fan-out's
   * cursor waits for its row.
   */
  private async attempt(d: ClaimedDelivery): Promise<void> {
    const { store, clock, service } = this.deps;
    let endpoint: Endpoint | undefined;
    try {
      endpoint = this.endpoints.get(d.endpointId) ?? (await this.endpoint(d.endpointId));
    } catch (e) {
      if (d.kind === 'fresh') this.fanOut.park(d);
      throw e;
    }
    if (!endpoint?.enabled) {
      // Disabled or deleted since: a row is failed; a fresh delivery gets no row, as the
      // fan-out would not have made one now.
      if (d.kind === 'stored') await store.settleDelivery(d.id, 'failed', d.attempts, null, clock.now());
      else this.fanOut.drop(d);
      return;
    }
    const at = clock.now();
    this.attempted(d, endpoint, at, await service.send(endpoint, d.event.id, d.event.body));
  }

  private attempted(d: ClaimedDelivery, endpoint: Endpoint, at: number, result: PostResult): void {
    const ok = ok2xx(result);
    const gone = result.status === 410;
    const deliveryId = d.kind === 'stored' ? d.id : null;
    const n = (d.kind === 'stored' ? d.attempts : 0) + 1;
    const state = ok ? 'succeeded' : gone || n >= WEBHOOK_MAX_ATTEMPTS ? 'failed' : 'pending';
    if (gone) this.endpoints.set(endpoint.id, { ...endpoint, enabled: false });
    this.quotas.attempted(endpoint.id, ok);
    // The last attempt before the dispatcher goes idle (nothing else running or held) is written at
    // once: there is nothing left to group it with, and its state and log should not wait.
    const last = this.pool.running === 1 && !this.pool.hasWaiting;
    this.attempts.add(
      {
        attempt: attemptRecord(endpoint.id, deliveryId, d.event, n, at, result),
        deliveryId,
        eventSeq: d.eventSeq,
        state,
        nextAt: state === 'pending' ? this.deps.clock.now() + WEBHOOK_RETRY_MS[n - 1]! : null,
        disableEndpoint: gone,
      },
      last,
    );
  }
}
