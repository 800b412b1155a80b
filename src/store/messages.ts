import { randomBytes } from 'node:crypto';
import type { Db } from './db.js';
import { findSuppressed } from './suppressions.js';
import { eventsOfMessage } from './events.js';
import { addressKey } from '../domain/addresses.js';
import { BASE32 } from '../lib/ids.js';
import type { Envelope } from '../domain/events.js';
import type { RecipientState } from './tables.js';

export interface AcceptInput {
  customerId: number;
  apiKeyId: string;
  sandbox: boolean;
  messageId: string;
  fromHeader: string;
  senderDomain: string;
  subject: string;
  metadata: Record<string, string>;
  raw: Buffer;
  recipients: Array<{ address: string; domain: string; field: 'to' | 'cc' | 'bcc' }>;
  idempotency?: { key: string; hash: Buffer; ttlMs: number };
  now: number;
}

export interface AcceptedResponse {
  message_id: string;
  status: 'queued';
  sandbox: boolean;
  recipients: string[];
}

export type AcceptResult =
  | { kind: 'accepted'; emailId: number; response: AcceptedResponse }
  | { kind: 'replay'; status: number; response: unknown }
  | { kind: 'conflict' }
  | { kind: 'suppressed'; addresses: Array<{ address: string; field: string; reason: string }> };

/** 80 random bits as 16 lower-case base32 chars: the bounces+<token>@ local part (survives case folding). */
export function newReturnToken(): string {
  let out = '';
  for (const b of randomBytes(16)) out += BASE32[b & 31];
  return out;
}

/**
 * Stores a message and its recipients (or answers from the idempotency record), all in the
 * caller's transaction. Idempotency first: a retried request gets its first response even if a
 * recipient was suppressed since. Suppressions are checked here, inside the transaction, so a
 * suppression committed before this message cannot be missed.
 */
export function acceptMessage(db: Db, input: AcceptInput): AcceptResult {
  const idem = input.idempotency;
  if (idem) {
    const prior = db.get(
      db.q.selectFrom('idempotency_keys').selectAll().where('customer_id', '=', input.customerId).where('key', '=', idem.key),
    );
    if (prior && prior.created_at > input.now - idem.ttlMs) {
      if (!prior.request_hash.equals(idem.hash)) return { kind: 'conflict' };
      return { kind: 'replay', status: prior.status, response: JSON.parse(prior.response) };
    }
    if (prior) db.run(db.q.deleteFrom('idempotency_keys').where('customer_id', '=', input.customerId).where('key', '=', idem.key));
  }

  const suppressed = findSuppressed(db, input.customerId, input.recipients.map((r) => r.address));
  if (suppressed.size > 0)
    return {
      kind: 'suppressed',
      addresses: input.recipients
        .filter((r) => suppressed.has(addressKey(r.address)))
        .map((r) => ({ address: r.address, field: r.field, reason: suppressed.get(addressKey(r.address))! })),
    };

  const { id: emailId } = db.get(
    db.q
      .insertInto('messages')
      .values({
        customer_id: input.customerId,
        message_id: input.messageId,
        api_key_id: input.apiKeyId,
        sandbox: input.sandbox ? 1 : 0,
        from_header: input.fromHeader,
        sender_domain: input.senderDomain,
        subject: input.subject,
        metadata: JSON.stringify(input.metadata),
        raw: input.raw,
        size: input.raw.length,
        created_at: input.now,
      })
      .returning('id'),
  )!;
  db.run(
    db.q.insertInto('recipients').values(
      input.recipients.map((r) => ({
        message_id: emailId,
        customer_id: input.customerId,
        address: r.address,
        domain: r.domain,
        field: r.field,
        state: 'queued' as const,
        attempts: 0,
        next_attempt_at: input.now,
        return_token: newReturnToken(),
        created_at: input.now,
        updated_at: input.now,
      })),
    ),
  );
  const response: AcceptedResponse = {
    message_id: input.messageId,
    status: 'queued',
    sandbox: input.sandbox,
    recipients: input.recipients.map((r) => r.address),
  };
  if (idem)
    db.run(
      db.q.insertInto('idempotency_keys').values({
        customer_id: input.customerId,
        key: idem.key,
        request_hash: idem.hash,
        status: 202,
        response: JSON.stringify(response),
        created_at: input.now,
      }),
    );
  return { kind: 'accepted', emailId, response };
}

export interface RecipientView {
  address: string;
  field: string;
  state: RecipientState;
  attempts: number;
  next_attempt_at: string | null;
  last_response: unknown;
}

export interface MessageView {
  email_id: number;
  message_id: string;
  from: string;
  subject: string;
  sandbox: boolean;
  metadata: Record<string, string>;
  size: number;
  created_at: string;
  recipients: RecipientView[];
  events: Envelope[];
}

/** A message with its recipients and events, or undefined (unknown, or another customer's). */
export function getMessage(db: Db, customerId: number | undefined, messageId: string): MessageView | undefined {
  let q = db.q.selectFrom('messages').selectAll().where('message_id', '=', messageId);
  if (customerId !== undefined) q = q.where('customer_id', '=', customerId);
  const m = db.get(q);
  if (!m) return undefined;
  const recipients = db.all(db.q.selectFrom('recipients').selectAll().where('message_id', '=', m.id).orderBy('id'));
  return {
    email_id: m.id,
    message_id: m.message_id,
    from: m.from_header,
    subject: m.subject,
    sandbox: m.sandbox === 1,
    metadata: JSON.parse(m.metadata) as Record<string, string>,
    size: m.size,
    created_at: new Date(m.created_at).toISOString(),
    recipients: recipients.map((r) => ({
      address: r.address,
      field: r.field,
      state: r.state,
      attempts: r.attempts,
      next_attempt_at: r.next_attempt_at !== null && (r.state === 'queued' || r.state === 'deferred') ? new Date(r.next_attempt_at).toISOString() : null,
      last_response: r.last_response ? JSON.parse(r.last_response) : null,
    })),
    events: eventsOfMessage(db, m.id),
  };
}
