import { Worker } from 'node:worker_threads';
import { LARGE_MESSAGE_BYTES } from '../../../lib/memory-budget.js';
import type { OpInput, OpName, OpResult } from './ops.js';
import type { BatchReply, WriterMessage } from './worker.js';

interface Waiter {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}
interface Job extends Waiter {
  op: OpName;
  input: unknown;
  /** Memory moved to the writer thread with the job instead of copied (see movable). */
  transfer?: ArrayBuffer[];
}

/**
 * The memory of a large Buffer, to move to the writer thread with its job instead of copying it
 * (a 25 MiB message copied is 25 MiB more held for the moment, twice over with the serialised
 * form). Only a Buffer that owns its whole ArrayBuffer can move: a small one is a slice of Node's
 * shared pool, which must stay where it is. The Buffer is empty afterwards.
 */
export function movable(b: Uint8Array | string): ArrayBuffer[] | undefined {
  if (typeof b === 'string' || b.byteLength < LARGE_MESSAGE_BYTES) return undefined;
  return b.byteOffset === 0 && b.buffer.byteLength === b.byteLength && b.buffer instanceof ArrayBuffer
    ? [b.buffer]
    : undefined;
}

/** An error from the writer thread, with SQLite's code kept (SQLITE_FULL → 503). */
export class StoreWriteError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * Group commit on a writer thread. Jobs submitted during one turn of the event loop go to the
 * writer in one message; the writer runs everything that arrived while it was committing as its
 * next transaction: one transaction, one fsync for many requests. Nothing waits for a reply
 * before sending more, so the writer commits back to back under load while the event loop keeps
 * reading and validating requests. A promise settles only after its transaction's COMMIT
 * returned (durable); a job that fails, fails alone (see worker.ts).
 */
export class GroupCommit {
  private readonly worker: Worker;
  /** Submitted this turn, not yet posted. */
  private queued: Job[] = [];
  /**
   * Posted, in order, awaiting their transaction's reply (which settles the oldest n). A posted
   * job keeps only its promise callbacks, and a settled slot is cleared at once: nothing of a
   * request (its body and all) may outlive its commit here, or the young generation promotes it
   * and the old one fills (measured: ~1 MB promoted per scavenge, and major collections, before).
   */
  private sent: Array<Waiter | undefined> = [];
  private sentHead = 0;
  private flushScheduled = false;
  private closed = false;
  private drained: (() => void) | null = null;
  batches = 0;
  jobs = 0;
  /** Jobs that make the turn send at once (measured: 8, 16, 32 and never gave 9.5k, 10.7k, 8.7k and 7.4k accepted/s). */
  static readonly EAGER = 16;

  constructor(dbPath: string, maxBytes = 0) {
    this.worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: { path: dbPath, maxBytes },
      // The writer's JS is small (statements and plain data): a small young generation is enough, and
      // saves ~30 MB of peak memory (bad-input test: 264-288 MB with the default, 249 with 2 MB).
      resourceLimits: { maxYoungGenerationSizeMb: 2 },
    });
    this.worker.on('message', (reply: BatchReply) => this.settle(reply));
    this.worker.on('error', (e) => this.failAll(e));
    this.worker.unref();
  }

  /** `transfer`: memory of the input to move to the writer rather than copy (movable()); unusable here afterwards. */
  submit<K extends OpName>(op: K, input: OpInput<K>, transfer?: ArrayBuffer[]): Promise<OpResult<K>> {
    if (this.closed) return Promise.reject(new StoreWriteError('the store is closed', 'SQLITE_BUSY'));
    return new Promise((resolve, reject) => {
      this.queued.push({
        op,
        input,
        resolve: resolve as (v: unknown) => void,
        reject,
        ...(transfer ? { transfer } : {}),
      });
      // A turn that reads many requests sends the first ones early, so the writer commits them
      // while the event loop still validates the rest (otherwise the two take turns idling).
      if (this.queued.length >= GroupCommit.EAGER) return this.flush();
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private get outstanding(): number {
    return this.sent.length - this.sentHead;
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.queued.length === 0) return;
    const jobs = this.queued;
    this.queued = [];
    const msg: WriterMessage = { jobs: jobs.map((j) => ({ op: j.op, input: j.input })) };
    let transfer: ArrayBuffer[] | undefined;
    if (this.outstanding === 0) this.worker.ref();
    for (const j of jobs) {
      j.input = undefined; // posted (copied): drop the reference
      if (j.transfer) (transfer ??= []).push(...j.transfer);
      j.transfer = undefined;
      this.sent.push(j);
    }
    this.worker.postMessage(msg, transfer);
  }

  private settle(reply: BatchReply): void {
    const batch = this.sent.slice(this.sentHead, this.sentHead + reply.count) as Waiter[];
    this.sent.fill(undefined, this.sentHead, this.sentHead + reply.count);
    this.sentHead += reply.count;
    if (this.sentHead > 4096 && this.sentHead * 2 > this.sent.length) {
      this.sent = this.sent.slice(this.sentHead);
      this.sentHead = 0;
    }
    if (!reply.ok) for (const job of batch) job.reject(new StoreWriteError(reply.error.message, reply.error.code));
    else {
      this.batches++;
      this.jobs += batch.length;
      batch.forEach((job, i) => {
        const o = reply.outcomes[i]!;
        if (o.ok) job.resolve(o.value);
        else job.reject(new StoreWriteError(o.error.message, o.error.code));
      });
    }
    if (this.outstanding === 0) {
      this.worker.unref();
      if (this.drained) this.drained();
    }
  }

  private failAll(e: unknown): void {
    for (const job of [...this.sent.slice(this.sentHead), ...this.queued]) job?.reject(e);
    this.sent = [];
    this.sentHead = 0;
    this.queued = [];
    if (this.drained) this.drained();
  }

  /** limits.max_store_bytes changed (SIGHUP). */
  setMaxBytes(bytes: number): void {
    this.worker.postMessage({ maxBytes: bytes } satisfies WriterMessage);
  }

  /** Stops taking writes, lets submitted ones commit, then closes the writer's connection. */
  async close(): Promise<void> {
    this.closed = true;
    this.flush();
    if (this.outstanding > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.ref();
    this.worker.postMessage('close' satisfies WriterMessage);
    await exited;
  }
}
