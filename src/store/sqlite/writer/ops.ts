import type { BatchInput, BatchResult, ReceiveInput, SendCommit, SendInput } from '../../model.js';
import { batchAnswer } from '../../model.js';
import type { Db } from '../db.js';
import { findSendingDomain } from '../domains.js';
import { storeInbound } from '../inbound.js';
import { isKeyLive, readAuthEpoch } from '../keys.js';
import { acceptMessage, idempotentAnswer, recordIdempotent } from '../messages.js';
import { standing } from '../reputation.js';
import { applyReport } from '../transitions.js';
import { recordAttempts } from '../webhook-attempts.js';

function receive(db: Db, input: ReceiveInput): string[] {
  const raw = Buffer.from(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength);
  const secret = Buffer.from(input.secret);
  const ids = input.stores.map((m) => storeInbound(db, { ...m, raw }, input.now));
  if (input.report) for (const env of input.reports) applyReport(db, secret, input.report, raw, env, input.now);
  return ids;
}

/** The customer paused since the API looked (a pause moves the epoch); a sandbox send goes on. */
function pausedNow(db: Db, input: { customerId: number; sandbox: boolean }) {
  if (input.sandbox) return undefined;
  const s = standing(db, input.customerId);
  return s.paused_at === null ? undefined : { kind: 'customer_paused' as const, reason: s.reason };
}

/**
 * The send path's commit. The API took the key and the domain from its cache without reading
 * the store; here, inside the transaction that stores the message, the epoch tells whether
 * either may have changed since, and if so both are verified again, so a key revoked or a
 * domain removed or unverified, or a customer paused, before this commit cannot get a message in.
 */
function accept(db: Db, input: SendInput): SendCommit {
  const authEpoch = readAuthEpoch(db);
  if (authEpoch !== input.authEpoch) {
    if (input.apiKeyId !== null && !isKeyLive(db, input.apiKeyId)) return { kind: 'key_revoked', authEpoch };
    const domain = findSendingDomain(db, input.senderDomain);
    if (!domain || domain.customer_id !== input.customerId) return { kind: 'domain_unknown', authEpoch };
    if (domain.verified_at === null) return { kind: 'domain_unverified', authEpoch };
    const paused = pausedNow(db, input);
    if (paused) return { ...paused, authEpoch };
  }
  return { ...acceptMessage(db, input), authEpoch };
}

/**
 * A batch's commit: every item that can be stored is, in this one transaction, and each gets its
 * result (model/messages.ts, batchAnswer); the batch's response is recorded under its
 * Idempotency-Key in the same transaction. Key and domains are verified again as for one message
 * when the epoch moved.
 */
function acceptBatch(db: Db, input: BatchInput): BatchResult {
  const authEpoch = readAuthEpoch(db);
  const idem = input.idempotency;
  if (idem) {
    const prior = idempotentAnswer(db, input.customerId, idem, input.now);
    if (prior) return { ...prior, authEpoch };
  }
  const moved = authEpoch !== input.authEpoch;
  if (moved) {
    if (input.apiKeyId !== null && !isKeyLive(db, input.apiKeyId)) return { kind: 'key_revoked', authEpoch };
  }
  const response = batchAnswer(input.items, (item) => {
    if (moved) {
      const domain = findSendingDomain(db, item.senderDomain);
      if (!domain || domain.customer_id !== item.customerId) return { kind: 'domain_unknown' };
      if (domain.verified_at === null) return { kind: 'domain_unverified' };
      const paused = pausedNow(db, item);
      if (paused) return paused;
    }
    return acceptMessage(db, item);
  });
  if (idem) recordIdempotent(db, input.customerId, idem, response, input.now);
  return { kind: 'accepted', response, authEpoch };
}

/**
 * The writes that go through the group-commit writer, by name. Each runs inside the writer's
 * batch transaction (in its own savepoint); inputs and results cross a thread boundary, so
 * they are plain data.
 */
export const writerOps = {
  accept,
  acceptBatch,
  receive,
  webhookAttempts: recordAttempts,
};

export type WriterOps = typeof writerOps;
export type OpName = keyof WriterOps;
export type OpInput<K extends OpName> = Parameters<WriterOps[K]>[1];
export type OpResult<K extends OpName> = ReturnType<WriterOps[K]>;

export type {
  BatchInput,
  BatchItem,
  BatchItemResult,
  BatchResult,
  ReceiveInput,
  SendCommit,
  SendInput,
} from '../../model.js';
