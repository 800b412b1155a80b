import { Worker } from 'node:worker_threads';
import type { OpName, OpInput, OpResult } from './writer-ops.js';
import type { BatchMessage, BatchReply } from './writer-worker.js';

interface Job {
  op: OpName;
  input: unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
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
 * Group commit on a writer thread. Writes submitted while the writer is busy wait and go
 * together as the next batch: one transaction, one fsync. Each job runs in its own savepoint, so
 * a failing job fails alone. A promise settles only after its batch's COMMIT returned (durable).
 * Because the fsync happens on the writer's thread, the event loop keeps reading and validating
 * requests meanwhile: batch N+1 fills while batch N is written.
 */
export class GroupCommit {
  private readonly worker: Worker;
  private pending: Job[] = [];
  private inFlight: Job[] | null = null;
  private closed = false;
  batches = 0;
  jobs = 0;

  constructor(dbPath: string, maxBytes = 0) {
    this.worker = new Worker(new URL('./writer-worker.js', import.meta.url), { workerData: { path: dbPath, maxBytes } });
    this.worker.on('message', (reply: BatchReply) => this.settle(reply));
    this.worker.on('error', (e) => this.failAll(e));
    this.worker.unref();
  }

  submit<K extends OpName>(op: K, input: OpInput<K>): Promise<OpResult<K>> {
    if (this.closed) return Promise.reject(new StoreWriteError('the store is closed', 'SQLITE_BUSY'));
    return new Promise((resolve, reject) => {
      this.pending.push({ op, input, resolve: resolve as (v: unknown) => void, reject });
      if (!this.inFlight) setImmediate(() => this.send());
    });
  }

  private send(): void {
    if (this.inFlight || this.pending.length === 0) return;
    this.inFlight = this.pending;
    this.pending = [];
    const msg: BatchMessage = { jobs: this.inFlight.map((j) => ({ op: j.op, input: j.input })) };
    this.worker.ref();
    this.worker.postMessage(msg);
  }

  private settle(reply: BatchReply): void {
    const batch = this.inFlight ?? [];
    this.inFlight = null;
    this.worker.unref();
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
    this.send();
    if (this.closed && !this.inFlight && this.drained) this.drained();
  }

  private drained: (() => void) | null = null;

  private failAll(e: unknown): void {
    for (const job of [...(this.inFlight ?? []), ...this.pending]) job.reject(e);
    this.inFlight = null;
    this.pending = [];
  }

  /** limits.max_store_bytes changed (SIGHUP). */
  setMaxBytes(bytes: number): void {
    this.worker.postMessage({ maxBytes: bytes });
  }

  /** Stops taking writes, lets submitted ones commit, then closes the writer's connection. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.inFlight || this.pending.length > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
        this.send();
      });
    }
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.ref();
    this.worker.postMessage('close');
    await exited;
  }
}
