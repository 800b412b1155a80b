import type { Db } from './db.js';

interface Job {
  fn: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit: writes submitted during one turn of the event loop share one transaction, so
 * one fsync covers many requests. Each job runs in its own savepoint, so a failing job rolls
 * back alone; every promise settles only after the shared COMMIT has returned (durable).
 */
export class GroupCommit {
  private pending: Job[] = [];
  private scheduled = false;
  /** Sizes of the last batches, for benchmarks and metrics. */
  batches = 0;
  jobs = 0;

  constructor(private readonly db: Db) {}

  submit<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    this.scheduled = false;
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      this.db.tx(() => {
        for (const job of batch) {
          try {
            results.push({ ok: true, value: this.db.tx(job.fn) });
          } catch (error) {
            results.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // The COMMIT itself failed (disk full, I/O error): nothing of this batch is durable.
      for (const job of batch) job.reject(error);
      return;
    }
    this.batches++;
    this.jobs += batch.length;
    batch.forEach((job, i) => {
      const r = results[i]!;
      if (r.ok) job.resolve(r.value);
      else job.reject(r.error);
    });
  }
}
