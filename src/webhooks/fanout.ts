import {
  type ClaimRoom,
  comparePos,
  type Endpoint,
  type FanOutPos,
  type FreshDelivery,
  type OutboxEvent,
  type SettledAttempt,
  subscribes,
} from '../store/model.js';
import type { WebhookStore } from '../store/store.js';

/** A delivery fanned out in memory that goes to the store as a pending row, due now (its endpoint had no room). */
export interface PendingRow {
  endpointId: string;
  eventSeq: number;
}

/** What one batch writes for the fan-out: the pending rows, the cursor (null: unchanged), and the fresh deliveries it stores per event. */
export interface FanOutWrite {
  pending: PendingRow[];
  cursor: FanOutPos | null;
  stores: Map<number, number>;
  /** The lease epoch these writes are made under (undefined: no lease, a single writer). */
  epoch: number | undefined;
}

/** The fan-out's lease: who holds it (unique per process), and for how long each renewal. */
export interface FanOutLease {
  holder: string;
  ttlMs: number;
  /**
   * How often a node not leading asks for the lease (ms; ASK_EVERY_MS unless given): never at
   * every wakeup, which on a busy cluster would be at every other node's commit.
   */
  askEveryMs?: number;
  /** Called when this process stops leading: fresh deliveries it holds are given up. */
  onDeposed: () => void;
}

/** Renewed when a third of the lease has passed; not trusted past the lease less this margin. */
const LEASE_MARGIN_MS = 1000;
/** A node not leading asks for the lease at most this often (docs/cluster.md: one short statement per node every 5 s). */
export const ASK_EVERY_MS = 5000;

/**
 * Fans new events out to subscribed endpoints in memory, and keeps the fan-out cursor honest.
 *
 * The invariant: the stored cursor never passes an event one of whose deliveries has no row yet.
 * A fresh delivery gets its row with its first attempt's record, or as a pending row; the cursor
 * moves only in those batches' transactions, and only past events whose deliveries are all in the
 * store once the batch commits. After a crash, what is past the cursor is fanned out again; a
 * delivery whose row was written before the crash (up to `checkUpTo`) is skipped.
 *
 * Several nodes on one database: one fans out at a time, the holder of the store's lease
 * (`lead`). Each batch carries the epoch it was taken with and the store refuses its fan-out
 * writes once another node holds the lease (a paused holder cannot move the cursor or create
 * rows after its lease was taken over). A holder that loses the lease forgets what it fanned out;
 * one that takes it starts from the stored cursor, as after a restart.
 */
export class FanOut {
  /** The last event fanned out in memory; null until the first `next` reads the store's cursor. */
  private cursor: FanOutPos | null = null;
  /** The cursor as committed (the last batch's, or the store's at start). */
  private storedCursor: FanOutPos = { x: 0, seq: 0 };
  /** The last event with a delivery row at start: at or before it, a row may exist past the cursor. */
  private checkUpTo: FanOutPos = { x: 0, seq: 0 };
  /**
   * Fresh deliveries not yet in the store, by event seq, in the order the events were fanned out
   * (a Map keeps it), each with the place of the event read just before it: the cursor can move
   * up to there and not past.
   */
  private readonly unstored = new Map<number, { n: number; before: FanOutPos }>();
  /** Fresh deliveries to write pending with the next batch. */
  private pending: PendingRow[] = [];

  /** The lease epoch held: undefined without a lease (a single writer), 0 when not leading. */
  private epoch: number | undefined;
  /** When the lease was last taken or renewed (this process's monotonic clock, ms). */
  private renewedAt = -Infinity;
  /** When this process, not leading, last asked for the lease (monotonic clock, ms). */
  private askedAt = -Infinity;

  /** `wantsWrite`: there is something for a batch to write even without attempts (pending rows, a cursor to move). */
  constructor(
    private readonly store: WebhookStore,
    private readonly wantsWrite: () => void,
    private readonly lease?: FanOutLease,
  ) {
    if (lease) this.epoch = 0;
  }

  /**
   * Whether this process may fan out now: takes or renews the lease when a third of it has
   * passed. Without an answer from the store, it stops leading once the lease may have run out.
   * Not leading, it asks again only once `askEveryMs` has passed since it last asked.
   */
  async lead(): Promise<boolean> {
    const lease = this.lease;
    if (!lease) return true;
    const t = performance.now();
    if (this.epoch !== 0 && t - this.renewedAt < lease.ttlMs / 3) return true;
    if (this.epoch === 0 && t - this.askedAt < (lease.askEveryMs ?? ASK_EVERY_MS)) return false;
    if (this.epoch === 0) this.askedAt = t;
    let epoch: number | null;
    try {
      epoch = await this.store.leadFanOut(lease.holder, lease.ttlMs);
    } catch (e) {
      if (this.epoch !== 0 && performance.now() - this.renewedAt > lease.ttlMs - LEASE_MARGIN_MS) this.depose();
      throw e;
    }
    if (epoch === null) {
      if (this.epoch !== 0) this.depose();
      return false;
    }
    // A new tenure (first, or after another's): start over from the stored cursor.
    if (epoch !== this.epoch) this.depose();
    this.epoch = epoch;
    this.renewedAt = t;
    return true;
  }

  /**
   * Whether new events are this process's to fan out now or at its next fill: no lease (a single
   * writer), the lease held, or (not holding it) its next ask for the lease due. Another node's
   * wakeup for new events is acted on only then: the others have nothing to do with new events.
   */
  wantsEvents(): boolean {
    if (!this.lease || this.epoch !== 0) return true;
    return performance.now() - this.askedAt >= (this.lease.askEveryMs ?? ASK_EVERY_MS);
  }

  /** At stop: the lease goes to another node at once. */
  async resign(): Promise<void> {
    if (this.lease && this.epoch !== 0) await this.store.resignFanOut(this.lease.holder);
    this.depose();
  }

  /** Not leading (any more): what was fanned out in memory is forgotten; the next holder fans it out from the stored cursor. */
  private depose(): void {
    if (!this.lease) return;
    const led = this.epoch !== 0;
    this.epoch = 0;
    this.renewedAt = -Infinity;
    this.cursor = null;
    this.unstored.clear();
    this.pending = [];
    if (led) this.lease.onDeposed();
  }

  /** The store refused a batch's fan-out writes: another node leads. */
  refused(): void {
    this.depose();
  }

  /**
   * At most `limit` new events: a delivery per subscribed enabled endpoint, returned to be held
   * while the endpoint has `room` (each counted with `take`), else parked to be written pending.
   * Reads only. Never two at once (the dispatcher's fills are one at a time: lib/keyed-pool.ts).
   */
  async next(limit: number, room: ClaimRoom): Promise<Array<{ delivery: FreshDelivery; endpoint: Endpoint }>> {
    const { store } = this;
    if (this.cursor === null) {
      const cursor = await store.fanOutCursor();
      this.checkUpTo = await store.lastFannedOut(cursor);
      this.cursor = this.storedCursor = cursor;
    }
    const events = await store.eventsAfter(this.cursor, limit);
    if (events.length === 0) return [];
    const held: Array<{ delivery: FreshDelivery; endpoint: Endpoint }> = [];
    const byCustomer = new Map<number, Endpoint[]>();
    for (const [i, e] of events.entries()) {
      // An event's endpoints are all read before anything is changed for it: a read that fails (the
      // store away) leaves it to be read again, and the events before it are handed out as they
      // are. Thrown further, the deliveries made for those would be lost with the cursor past them.
      let targets: Endpoint[];
      try {
        targets = await this.targets(e, byCustomer);
      } catch (err) {
        if (i === 0) throw err;
        break;
      }
      for (const endpoint of targets) {
        if (room.room(endpoint.id) > 0) {
          room.take(endpoint.id);
          held.push({ delivery: { kind: 'fresh', endpointId: endpoint.id, eventSeq: e.seq, event: e }, endpoint });
        } else this.pending.push({ endpointId: endpoint.id, eventSeq: e.seq });
      }
      if (targets.length > 0) this.unstored.set(e.seq, { n: targets.length, before: this.cursor });
      this.cursor = e.pos;
    }
    // Pending rows to write, or a cursor that can move with nothing unstored: a batch soon.
    if (this.pending.length > 0 || this.unstored.size === 0) this.wantsWrite();
    return held;
  }

  /** The enabled endpoints `e` goes to, less those it was delivered to before a restart (reads only). */
  private async targets(e: OutboxEvent, byCustomer: Map<number, Endpoint[]>): Promise<Endpoint[]> {
    let list = byCustomer.get(e.customerId);
    if (!list)
      byCustomer.set(e.customerId, (list = (await this.store.listEndpoints(e.customerId)).filter((x) => x.enabled)));
    const targets: Endpoint[] = [];
    for (const endpoint of list) {
      if (!subscribes(endpoint, e)) continue;
      // Fanned out before a restart and recorded, though the cursor had not moved past it.
      if (comparePos(e.pos, this.checkUpTo) <= 0 && (await this.store.hasDelivery(e.seq, endpoint.id))) continue;
      targets.push(endpoint);
    }
    return targets;
  }

  /** A fresh delivery taken back from memory (its endpoint is over quota, or could not be read): written pending with the next batch. */
  park(d: FreshDelivery): void {
    this.pending.push({ endpointId: d.endpointId, eventSeq: d.eventSeq });
    this.wantsWrite();
  }

  /** A fresh delivery that gets no row (its endpoint was disabled or deleted since). */
  drop(d: FreshDelivery): void {
    this.stored(d.eventSeq, 1);
    this.wantsWrite();
  }

  /**
   * What a batch recording these attempts writes for the fan-out (the pending rows are taken), or
   * null when it writes nothing. Batches still in flight count as unstored here, so this one's
   * cursor stays behind theirs.
   */
  forBatch(attempts: SettledAttempt[]): FanOutWrite | null {
    const stores = new Map<number, number>();
    for (const a of attempts) if (a.deliveryId === null) stores.set(a.eventSeq, (stores.get(a.eventSeq) ?? 0) + 1);
    for (const p of this.pending) stores.set(p.eventSeq, (stores.get(p.eventSeq) ?? 0) + 1);
    const cursor = this.cursorWith(stores);
    if (attempts.length === 0 && this.pending.length === 0 && cursor === null) return null;
    const pending = this.pending;
    this.pending = [];
    return { pending, cursor, stores, epoch: this.epoch };
  }

  /** The batch committed: its deliveries are in the store, its cursor is the stored one. */
  recorded(w: FanOutWrite): void {
    for (const [seq, n] of w.stores) this.stored(seq, n);
    if (w.cursor !== null && comparePos(w.cursor, this.storedCursor) > 0) this.storedCursor = w.cursor;
  }

  /** The batch did not commit: its pending rows go with the next one. */
  notRecorded(w: FanOutWrite): void {
    this.pending.unshift(...w.pending);
  }

  /** The cursor to store with a batch: past every event whose deliveries will all be in the store once it commits. */
  private cursorWith(stores: Map<number, number>): FanOutPos | null {
    if (this.cursor === null) return null;
    let cursor = this.cursor;
    for (const [seq, u] of this.unstored)
      if (u.n > (stores.get(seq) ?? 0)) {
        cursor = u.before;
        break;
      }
    return comparePos(cursor, this.storedCursor) > 0 ? cursor : null;
  }

  private stored(seq: number, n: number): void {
    const u = this.unstored.get(seq);
    if (!u) return;
    if (u.n > n) u.n -= n;
    else this.unstored.delete(seq);
  }
}
