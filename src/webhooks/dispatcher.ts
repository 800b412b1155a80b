import type { Db } from '../store/db.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import {
  claimDeliveries,
  enabledEndpointIds,
  eventsAfter,
  fanOutCursor,
  getEndpoint,
  hasDelivery,
  hasDue,
  lastFannedOutSeq,
  listEndpoints,
  recordAttempts,
  settleDelivery,
  subscribes,
  unlockDeliveries,
  type AttemptBatch,
  type ClaimRoom,
  type ClaimedDelivery,
  type Endpoint,
  type SettledAttempt,
} from '../store/webhooks.js';
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
   * Commits a batch of finished attempts (with the rows of deliveries fanned out in memory and
   * the fan-out cursor). The daemon passes the group-commit writer, so the fsync happens off the
   * event loop that is sending the next requests; by default it is a transaction on `db`.
   */
  record?: (input: AttemptBatch) => Promise<void>;
}

/** Attempts recorded per transaction at most; a batch this full is written at once. */
const FLUSH_BATCH = 256;
/**
 * Held ahead per endpoint (fanned out or claimed), and in all. A fill costs store work on the
 * event loop, so the quota is large for an endpoint that keeps up (bench webhooks: 1,024 took
 * 5-10 % less of the daemon's CPU than 256); the total bounds the event bodies held in memory
 * (~1 KiB each).
 */
const CLAIM_PER_ENDPOINT = 1024;
const CLAIM_TOTAL = 16_384;
/** Events fanned out per fill at most. */
const FANOUT_MAX = 1000;

/**
 * Delivers the outbox: fans new events out to subscribed endpoints in memory, claims due
 * delivery rows (retries) in batches, with a quota per endpoint, sends at most `perEndpoint` at
 * once to each endpoint (one slow or dead endpoint cannot hold up the others), and records
 * attempts, retries and final states in grouped transactions.
 *
 * A delivery fanned out in memory gets its row with its first attempt's record (or as a pending
 * row, when its endpoint has no room). The fan-out cursor in the store moves in those same
 * transactions, only past events whose deliveries all have their rows: a crash loses nothing,
 * and what was past the cursor is fanned out again at the next start (skipping deliveries whose
 * rows exist). So the usual delivery costs one insert and no transaction on the event loop.
 */
export class Dispatcher {
  private backlog = new Map<string, ClaimedDelivery[]>();
  private active = 0;
  private inFlight = new Set<Promise<void>>();
  private perEndpoint = new Map<string, number>();
  /** Finished attempts, with what each decided, to record with the next batch. */
  private settled: SettledAttempt[] = [];
  private readonly loop = new PollLoop();
  private stopped = false;
  private flushTimer: NodeJS.Timeout | null = null;
  /** Endpoints as of the last claim: enabled state and secret changes are seen from the next claim on. */
  private endpoints = new Map<string, Endpoint | undefined>();
  /** The last event fanned out (in memory), the cursor as stored, and the highest event with a row at start. */
  private cursor: number | null = null;
  private storedCursor = 0;
  private checkUpTo = 0;
  /** Deliveries fanned out in memory and not yet in the store, by event seq (ascending). */
  private unstored = new Map<number, number>();
  /** Fanned out while their endpoint had no room: written pending with the next batch. */
  private toPending: Array<{ endpointId: string; eventSeq: number }> = [];

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
    await this.loop.run(
      signal,
      this.deps.pollInterval,
      () => this.fill(),
      (e) => this.deps.log.error({ err: e }, 'webhooks: claim failed; retrying'),
    );
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

  /** Deliveries an endpoint holds: waiting in memory and in flight (tests, metrics). */
  held(endpointId: string): number {
    return (this.backlog.get(endpointId)?.length ?? 0) + (this.perEndpoint.get(endpointId) ?? 0);
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

  /**
   * Backlog beyond the quota of an endpoint that has just failed, taken back: rows to unlock
   * (returned), and deliveries fanned out in memory to write pending with the next batch.
   */
  private overQuota(): ClaimedDelivery[] {
    const rows: ClaimedDelivery[] = [];
    for (const [e, list] of this.backlog) {
      const excess = list.length - this.quota(e);
      if (excess <= 0) continue;
      for (const d of list.splice(list.length - excess)) {
        if (d.id !== null) rows.push(d);
        else this.toPending.push({ endpointId: d.endpointId, eventSeq: d.eventSeq });
      }
      this.scheduleFlush();
    }
    return rows;
  }

  /**
   * What may be claimed now: each endpoint up to its quota, less what it holds (backlog and in
   * flight), and all together up to claimTotal (the backlog keeps each event's body in memory).
   */
  private claimRoom(): ClaimRoom {
    // What each endpoint holds as of now (taken on first ask), plus what this fill takes for it.
    const held = new Map<string, number>();
    const holds = (e: string): number => held.get(e) ?? held.set(e, this.held(e)).get(e)!;
    let total = this.active;
    for (const list of this.backlog.values()) total += list.length;
    let free = Math.max(0, (this.deps.claimTotal ?? CLAIM_TOTAL) - total);
    return {
      room: (e) => Math.min(free, Math.max(0, this.quota(e) - holds(e))),
      take: (e) => {
        held.set(e, holds(e) + 1);
        free--;
      },
    };
  }

  /**
   * Claims due delivery rows for each endpoint below its quota (retries, and deliveries that went
   * to the store while their endpoint was full come first), then fans new events out in memory
   * within the room left; starts what the limits allow and returns how many started.
   *
   * Only claims write (locks), and only when a read finds rows due: on the event loop's own
   * connection, in a transaction that is only tried, because waiting for the writer thread's
   * lock would block this event loop in SQLite's busy handler (at least 1 ms a time; a lock held
   * elsewhere blocked it up to busy_timeout). Then it is tried again on the next attempt's
   * completion, or in a millisecond.
   */
  private fill(wait = false): number {
    if (this.stopped) return 0;
    const { db, clock, worker } = this.deps;
    this.endpoints.clear();
    const now = clock.now();
    const release = this.overQuota();
    const room = this.claimRoom();
    const enabled = enabledEndpointIds(db);
    if (
      release.length > 0 ||
      hasDue(
        db,
        enabled.filter((e) => room.room(e) > 0),
        now,
      )
    ) {
      const work = (): ClaimedDelivery[] => {
        unlockDeliveries(
          db,
          release.map((d) => d.id!),
        );
        return claimDeliveries(db, worker, now, room);
      };
      let taken: ClaimedDelivery[] | undefined;
      try {
        taken = wait ? db.tx(work) : db.tryTx(work)?.value;
      } finally {
        // Not written: what was taken back from the backlog is still locked; it goes back.
        if (!taken) for (const d of release) this.enqueue(d);
      }
      // Busy: the due rows wait for the retry; new events need no lock and go on meanwhile.
      if (!taken) this.retrySoon();
      else for (const d of taken) this.enqueue(d);
    }
    // As many new events as the emptiest endpoint has room for: with every endpoint full, they
    // wait in the outbox (fanning them out would only write pending rows to claim later). With no
    // endpoint at all, the cursor still moves on.
    let most = enabled.length === 0 ? FANOUT_MAX : 0;
    for (const id of enabled) most = Math.max(most, room.room(id));
    if (most > 0) this.fanOut(Math.min(FANOUT_MAX, most), room);
    return this.dispatch();
  }

  /**
   * New events, in memory: a delivery per subscribed enabled endpoint, held while the endpoint
   * has room, else written pending with the next batch. No store write.
   */
  private fanOut(limit: number, room: ClaimRoom): void {
    const { db } = this.deps;
    if (this.cursor === null) {
      this.cursor = this.storedCursor = fanOutCursor(db);
      this.checkUpTo = lastFannedOutSeq(db);
    }
    const events = eventsAfter(db, this.cursor, limit);
    if (events.length === 0) return;
    const byCustomer = new Map<number, Endpoint[]>();
    for (const e of events) {
      let list = byCustomer.get(e.customerId);
      if (!list) byCustomer.set(e.customerId, (list = listEndpoints(db, e.customerId).filter((x) => x.enabled)));
      let n = 0;
      for (const ep of list) {
        if (!subscribes(ep, e)) continue;
        // Fanned out before a restart and recorded, though the cursor had not moved past it.
        if (e.seq <= this.checkUpTo && hasDelivery(db, e.seq, ep.id)) continue;
        n++;
        this.endpoints.set(ep.id, ep);
        if (room.room(ep.id) > 0) {
          room.take(ep.id);
          this.enqueue({ id: null, endpointId: ep.id, eventSeq: e.seq, attempts: 0, event: e });
        } else this.toPending.push({ endpointId: ep.id, eventSeq: e.seq });
      }
      if (n > 0) this.unstored.set(e.seq, n);
    }
    this.cursor = events[events.length - 1]!.seq;
    // Pending rows to write, or a cursor that can move with nothing in flight: a batch soon.
    if (this.toPending.length > 0 || this.unstored.size === 0) this.scheduleFlush();
  }

  /** A delivery fanned out in memory is in the store now (or needs no row). */
  private stored(seq: number, n = 1): void {
    const left = (this.unstored.get(seq) ?? 0) - n;
    if (left > 0) this.unstored.set(seq, left);
    else this.unstored.delete(seq);
  }

  /** The cursor to store with a batch: past every event whose deliveries will all be in the store once it commits. */
  private cursorWith(contrib: Map<number, number>): number | null {
    if (this.cursor === null) return null;
    let cursor = this.cursor;
    for (const [seq, n] of this.unstored)
      if (n > (contrib.get(seq) ?? 0)) {
        cursor = seq - 1;
        break;
      }
    return cursor > this.storedCursor ? cursor : null;
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
    const finished = (): void => {
      this.active--;
      this.perEndpoint.set(d.endpointId, (this.perEndpoint.get(d.endpointId) ?? 1) - 1);
      this.inFlight.delete(p);
      this.refill(d.endpointId);
    };
    const p: Promise<void> = this.attempt(d).then(finished, (e: unknown) => {
      this.deps.log.error({ err: e, delivery: d.id }, 'webhook attempt failed unexpectedly');
      finished();
    });
    this.inFlight.add(p);
  }

  private endpoint(id: string): Endpoint | undefined {
    if (!this.endpoints.has(id)) this.endpoints.set(id, getEndpoint(this.deps.db, id));
    return this.endpoints.get(id);
  }

  /**
   * One attempt: its outcome is held for the next batch (no promise or await of its own beyond the
   * POST's). It never throws: a store error on the way (a read of the endpoint, a write for a
   * disabled one) rejects, as an async function would, so start() still counts the attempt finished.
   */
  private attempt(d: ClaimedDelivery): Promise<void> {
    const { db, clock, service } = this.deps;
    try {
      const endpoint = this.endpoint(d.endpointId);
      if (!endpoint?.enabled) {
        // Disabled or deleted since: a row is failed; one fanned out in memory gets no row, as the
        // fan-out would not have made one now.
        if (d.id !== null) settleDelivery(db, d.id, 'failed', d.attempts, null, clock.now());
        else {
          this.stored(d.eventSeq);
          this.scheduleFlush();
        }
        return Promise.resolve();
      }
      const at = clock.now();
      return service.send(endpoint, d.event.id, d.event.body).then((result) => this.attempted(d, endpoint, at, result));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  private attempted(d: ClaimedDelivery, endpoint: Endpoint, at: number, result: PostResult): void {
    const ok = ok2xx(result);
    const gone = result.status === 410;
    const n = d.attempts + 1;
    const state = ok ? 'succeeded' : gone || n >= WEBHOOK_MAX_ATTEMPTS ? 'failed' : 'pending';
    this.settled.push({
      attempt: {
        endpointId: endpoint.id,
        deliveryId: d.id,
        eventId: d.event.id,
        eventType: d.event.type,
        attempt: n,
        at,
        status: result.status,
        error: result.error,
        durationMs: result.durationMs,
        response: result.response,
      },
      deliveryId: d.id,
      eventSeq: d.eventSeq,
      state,
      nextAt: state === 'pending' ? this.deps.clock.now() + WEBHOOK_RETRY_MS[n - 1]! : null,
      disableEndpoint: gone,
    });
    // Webhooks are at-least-once and receivers dedupe on webhook-id: recording an attempt a few
    // milliseconds later (so many share one commit) risks at worst a duplicate after a crash.
    if (gone) this.endpoints.set(endpoint.id, { ...endpoint, enabled: false });
    if (ok) this.healthy.add(endpoint.id);
    else this.healthy.delete(endpoint.id);
    // A full batch is written at once, and so is the last attempt before the dispatcher goes idle
    // (nothing else in flight or held): there is nothing left to group it with, and its state and
    // log should not wait for the timer.
    if (this.settled.length >= FLUSH_BATCH || (this.active === 1 && this.backlog.size === 0)) void this.flush();
    else this.scheduleFlush();
  }

  private scheduleFlush(): void {
    this.flushTimer ??= setTimeout(() => void this.flush(), this.deps.flushInterval ?? 25);
  }

  private readonly flushing = new Set<Promise<void>>();

  /**
   * Records the finished attempts so far in one transaction (through `record`), with the
   * pending rows to write and the fan-out cursor as far as it can go once they are stored.
   */
  private flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const batch = this.settled;
    const pending = this.toPending;
    const contrib = new Map<number, number>();
    for (const a of batch) if (a.deliveryId === null) contrib.set(a.eventSeq, (contrib.get(a.eventSeq) ?? 0) + 1);
    for (const p of pending) contrib.set(p.eventSeq, (contrib.get(p.eventSeq) ?? 0) + 1);
    // Batches in flight still count as unstored here: this one's cursor stays behind theirs.
    const cursor = this.cursorWith(contrib);
    if (batch.length === 0 && pending.length === 0 && cursor === null) return Promise.resolve();
    this.settled = [];
    this.toPending = [];
    const { db, clock, log } = this.deps;
    const record = this.deps.record ?? ((input: AttemptBatch) => Promise.resolve(db.tx(() => recordAttempts(db, input))));
    const p = record({ batch, pending, cursor, now: clock.now() })
      .then(() => {
        for (const [seq, n] of contrib) this.stored(seq, n);
        if (cursor !== null) this.storedCursor = Math.max(this.storedCursor, cursor);
        for (const { state, disableEndpoint, attempt } of batch) {
          this.deps.onAttempt?.(state === 'succeeded' ? 'success' : disableEndpoint ? 'gone' : 'failure');
          if (state !== 'succeeded')
            log.info(
              { endpoint: attempt.endpointId, event_id: attempt.eventId, type: attempt.eventType, attempt: attempt.attempt, status: attempt.status, error: attempt.error },
              'webhook attempt failed',
            );
        }
      })
      .catch((e: unknown) => {
        // The store cannot write (disk full): keep the outcomes and try again with the next batch.
        log.error({ err: e, attempts: batch.length }, 'webhooks: recording attempts failed; will retry');
        this.settled.unshift(...batch);
        this.toPending.unshift(...pending);
        this.flushTimer ??= setTimeout(() => void this.flush(), 1000).unref();
      })
      .finally(() => this.flushing.delete(p));
    this.flushing.add(p);
    return p;
  }

  /** At stop: rows are unlocked; deliveries fanned out in memory need nothing (the cursor is before them). */
  private releaseBacklog(): void {
    const ids = [...this.backlog.values()]
      .flat()
      .map((d) => d.id)
      .filter((id): id is number => id !== null);
    this.backlog.clear();
    this.deps.db.tx(() => unlockDeliveries(this.deps.db, ids));
  }
}
