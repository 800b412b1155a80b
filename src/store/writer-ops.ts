import type { Db } from './db.js';
import { acceptMessage, type AcceptInput, type AcceptResult } from './messages.js';
import { readAuthEpoch } from './auth-cache.js';
import { findSendingDomain } from './domains.js';
import { recordAttempts } from './webhooks.js';
import { storeInbound, type StoredInbound } from './inbound.js';
import { applyReport, type ReportEnvelope } from '../reports/apply.js';
import type { Report } from '../reports/read.js';

/** One inbound transaction: messages for receiving domains, and the report it is, for each of posthaste's addresses it came to. */
export interface ReceiveInput {
  /** The messages to store; their bytes are `raw`, sent once for all of them. */
  stores: Array<Omit<StoredInbound, 'raw'>>;
  /** What the message says as a report (read once), when it came to a return path or the feedback address. */
  report: Report | null;
  reports: ReportEnvelope[];
  raw: Uint8Array;
  secret: Uint8Array;
  now: number;
}

function receive(db: Db, input: ReceiveInput): string[] {
  const raw = Buffer.from(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength);
  const secret = Buffer.from(input.secret);
  const ids = input.stores.map((m) => storeInbound(db, { ...m, raw }, input.now));
  if (input.report) for (const env of input.reports) applyReport(db, secret, input.report, raw, env, input.now);
  return ids;
}

export interface SendInput extends AcceptInput {
  /** auth_epoch the API's cached key and domain were at least as new as. */
  authEpoch: string;
}
export type SendResult = (AcceptResult | { kind: 'key_revoked' } | { kind: 'domain_unknown' } | { kind: 'domain_unverified' }) & {
  /** auth_epoch as this transaction saw it: the API drops its cache when it moved. */
  authEpoch: string;
};

/**
 * The send path's commit. The API took the key and the domain from its cache without reading
 * the store; here, inside the transaction that stores the message, the epoch tells whether
 * either may have changed since, and if so both are verified again, so a key revoked or a
 * domain removed or unverified before this commit cannot get a message in.
 */
function accept(db: Db, input: SendInput): SendResult {
  const authEpoch = readAuthEpoch(db);
  if (authEpoch !== input.authEpoch) {
    const key = db.statement('SELECT revoked_at FROM api_keys WHERE id = ?').get(input.apiKeyId) as { revoked_at: number | null } | undefined;
    if (!key || key.revoked_at !== null) return { kind: 'key_revoked', authEpoch };
    const domain = findSendingDomain(db, input.senderDomain);
    if (!domain || domain.customer_id !== input.customerId) return { kind: 'domain_unknown', authEpoch };
    if (domain.verified_at === null) return { kind: 'domain_unverified', authEpoch };
  }
  return { ...acceptMessage(db, input), authEpoch };
}

/**
 * The writes that go through the group-commit writer, by name. Each runs inside the writer's
 * batch transaction (in its own savepoint); inputs and results cross a thread boundary, so
 * they are plain data.
 */
export const writerOps = {
  accept,
  receive,
  webhookAttempts: recordAttempts,
};

export type WriterOps = typeof writerOps;
export type OpName = keyof WriterOps;
export type OpInput<K extends OpName> = Parameters<WriterOps[K]>[1];
export type OpResult<K extends OpName> = ReturnType<WriterOps[K]>;
