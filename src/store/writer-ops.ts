import type { Db } from './db.js';
import { acceptMessage, type AcceptInput, type AcceptResult } from './messages.js';
import { storeInbound, type StoredInbound } from './inbound.js';
import { applyDsn, applyArf, type Envelope } from '../reports/apply.js';
import type { DsnReport } from '../reports/dsn.js';
import type { ArfReport } from '../reports/arf.js';

/** One inbound transaction: messages for receiving domains, and reports to apply. */
export interface ReceiveInput {
  /** The messages to store; their bytes are `raw`, sent once for all of them. */
  stores: Array<Omit<StoredInbound, 'raw'>>;
  dsn: Array<{ report: DsnReport | null; env: Envelope }>;
  arf: Array<{ report: ArfReport | null; env: Envelope }>;
  raw: Uint8Array;
  secret: Uint8Array;
  now: number;
}

function receive(db: Db, input: ReceiveInput): string[] {
  const raw = Buffer.from(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength);
  const secret = Buffer.from(input.secret);
  const ids = input.stores.map((m) => storeInbound(db, { ...m, raw }, input.now));
  for (const d of input.dsn) applyDsn(db, secret, d.report, raw, d.env, input.now);
  for (const a of input.arf) applyArf(db, secret, a.report, raw, a.env, input.now);
  return ids;
}

/**
 * The writes that go through the group-commit writer, by name. Each runs inside the writer's
 * batch transaction (in its own savepoint); inputs and results cross a thread boundary, so
 * they are plain data.
 */
export const writerOps = {
  accept: (db: Db, input: AcceptInput): AcceptResult => acceptMessage(db, input),
  receive,
};

export type WriterOps = typeof writerOps;
export type OpName = keyof WriterOps;
export type OpInput<K extends OpName> = Parameters<WriterOps[K]>[1];
export type OpResult<K extends OpName> = ReturnType<WriterOps[K]>;
