import type { Db } from './db.js';
import { acceptMessage, type AcceptInput, type AcceptResult } from './messages.js';

/**
 * The writes that go through the group-commit writer, by name. Each runs inside the writer's
 * batch transaction (in its own savepoint); inputs and results cross a thread boundary, so
 * they are plain data.
 */
export const writerOps = {
  accept: (db: Db, input: AcceptInput): AcceptResult => acceptMessage(db, input),
};

export type WriterOps = typeof writerOps;
export type OpName = keyof WriterOps;
export type OpInput<K extends OpName> = Parameters<WriterOps[K]>[1];
export type OpResult<K extends OpName> = ReturnType<WriterOps[K]>;
