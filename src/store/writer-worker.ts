// The group-commit writer's thread: its own connection, one transaction per batch.
import { parentPort, workerData } from 'node:worker_threads';
import { Db } from './db.js';
import { writerOps, type OpName } from './writer-ops.js';

export interface BatchMessage {
  jobs: Array<{ op: OpName; input: unknown }>;
}
export type JobOutcome = { ok: true; value: unknown } | { ok: false; error: { message: string; code?: string } };
export type BatchReply = { ok: true; outcomes: JobOutcome[] } | { ok: false; error: { message: string; code?: string } };

const db = new Db((workerData as { path: string; maxBytes: number }).path, (workerData as { maxBytes: number }).maxBytes);

function plainError(e: unknown): { message: string; code?: string } {
  const err = e as { message?: string; code?: unknown };
  return { message: String(err?.message ?? e), ...(typeof err?.code === 'string' ? { code: err.code } : {}) };
}

parentPort!.on('message', (msg: BatchMessage | 'close' | { maxBytes: number }) => {
  if (msg === 'close') {
    db.close();
    parentPort!.close();
    return;
  }
  if ('maxBytes' in msg) {
    db.setMaxBytes(msg.maxBytes);
    return;
  }
  const outcomes: JobOutcome[] = [];
  let reply: BatchReply;
  let fatal: { message: string; code?: string } | null = null;
  try {
    db.tx(() => {
      for (const job of msg.jobs) {
        try {
          const op = writerOps[job.op] as (db: Db, input: unknown) => unknown;
          outcomes.push({ ok: true, value: db.tx(() => op(db, job.input)) });
        } catch (e) {
          outcomes.push({ ok: false, error: plainError(e) });
          // SQLITE_FULL and I/O errors can make SQLite roll back the whole transaction, not just
          // the savepoint: then nothing of the batch will commit, and the cause must be reported.
          if (!db.sqlite.inTransaction) {
            fatal = plainError(e);
            throw e;
          }
        }
      }
    });
    reply = { ok: true, outcomes };
  } catch (e) {
    // The batch failed (disk full, I/O error): nothing of it is durable.
    reply = { ok: false, error: fatal ?? plainError(e) };
  }
  parentPort!.postMessage(reply);
});
