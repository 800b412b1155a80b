// The group-commit writer's thread: its own connection, one transaction for all the jobs that
// arrived while the previous one was committing.
import { parentPort, workerData } from 'node:worker_threads';
import { Db } from '../db.js';
import { type OpName, writerOps } from './ops.js';

export type WriterMessage = { jobs: Array<{ op: OpName; input: unknown }> } | { maxBytes: number } | 'close';
export type JobOutcome = { ok: true; value: unknown } | { ok: false; error: { message: string; code?: string } };
/** The reply for the oldest `count` jobs not yet answered, in the order they were posted. */
export type BatchReply = { count: number } & (
  | { ok: true; outcomes: JobOutcome[] }
  | { ok: false; error: { message: string; code?: string } }
);

// 8 MiB of page cache: the writer appends (rightmost B-tree pages) and reads single rows by key;
// a large cache would only keep the pages of big messages it has already written.
const db = new Db(
  (workerData as { path: string; maxBytes: number }).path,
  (workerData as { maxBytes: number }).maxBytes,
  8192,
);
let queue: Array<{ op: OpName; input: unknown }> = [];
let scheduled = false;

function plainError(e: unknown): { message: string; code?: string } {
  const err = e as { message?: string; code?: unknown };
  return { message: String(err?.message ?? e), ...(typeof err?.code === 'string' ? { code: err.code } : {}) };
}

function run(job: { op: OpName; input: unknown }): unknown {
  const op = writerOps[job.op] as (db: Db, input: unknown) => unknown;
  return op(db, job.input);
}

/**
 * One transaction for the whole batch. The common case has no failing job, so the jobs run
 * without savepoints (two statements fewer per job); if anything throws, nothing of that attempt
 * is kept and the batch runs again with a savepoint per job, so a failing job fails alone.
 */
function commit(jobs: Array<{ op: OpName; input: unknown }>): BatchReply {
  try {
    return {
      count: jobs.length,
      ok: true,
      outcomes: db.tx(() => jobs.map((job) => ({ ok: true as const, value: run(job) }))),
    };
  } catch {
    // fall through to the careful path
  }
  const outcomes: JobOutcome[] = [];
  let fatal: { message: string; code?: string } | null = null;
  try {
    db.tx(() => {
      for (const job of jobs) {
        try {
          outcomes.push({ ok: true, value: db.tx(() => run(job)) });
        } catch (e) {
          outcomes.push({ ok: false, error: plainError(e) });
          // SQLITE_FULL and I/O errors can make SQLite roll back the whole transaction, not just
          // the savepoint: then nothing of the batch will commit, and the cause must be reported.
          if (!db.inTransaction) {
            fatal = plainError(e);
            throw e;
          }
        }
      }
    });
    return { count: jobs.length, ok: true, outcomes };
  } catch (e) {
    // The batch failed (disk full, I/O error): nothing of it is durable.
    return { count: jobs.length, ok: false, error: fatal ?? plainError(e) };
  }
}

function commitQueued(): void {
  scheduled = false;
  if (queue.length === 0) return;
  const jobs = queue;
  queue = [];
  parentPort!.postMessage(commit(jobs));
}

parentPort!.on('message', (msg: WriterMessage) => {
  if (msg === 'close') {
    commitQueued();
    db.close();
    parentPort!.close();
    return;
  }
  if ('maxBytes' in msg) {
    db.setMaxBytes(msg.maxBytes);
    return;
  }
  for (const job of msg.jobs) queue.push(job);
  // Messages that arrived while the last transaction ran are all delivered before the check
  // phase, so this runs them together.
  if (!scheduled) {
    scheduled = true;
    setImmediate(commitQueued);
  }
});
