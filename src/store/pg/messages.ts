import { uniqueViolation, type PgDb, type Q } from './db.js';
import type { MessageStore } from '../store.js';
import { acceptedResponse, type AcceptInput, type AcceptResult, type MessageSearch, type MessageSummary, type MessageView, type RecipientState } from '../model.js';
import type { BatchInput, BatchItemResult, BatchResult, SendCommit, SendInput } from '../model.js';
import type { SuppressionReason } from '../model.js';
import { addressKey } from '../../domain/addresses.js';
import { refusal } from '../../domain/errors.js';
import type { EventEnvelope } from '../../domain/events.js';

/**
 * Messages on PostgreSQL: the send path's commit (the same steps as the SQLite writer's, in one
 * transaction of four round trips: BEGIN, the auth epoch with the suppressions, the message with
 * its recipients and tags in one statement, COMMIT), and the reads the API and dashboard make.
 */

/** Positional parameters for a query built in pieces: `p(v)` adds v and gives its `$n`. */
function params(): { p: (v: unknown) => string; values: unknown[] } {
  const values: unknown[] = [];
  return { p: (v) => `$${values.push(v)}`, values };
}

async function readEpoch(q: Q): Promise<string> {
  return (await q.row<{ value: string }>("SELECT value FROM settings WHERE name = 'auth_epoch'"))?.value ?? '';
}

/** A fresh Idempotency-Key's first answer, or conflict; a stale record is removed. */
async function idempotentAnswer(q: Q, customerId: number, idem: { key: string; hash: Uint8Array; ttlMs: number }, now: number) {
  const prior = await q.row<{ request_hash: Buffer; status: number; response: string; created_at: number }>(
    'SELECT request_hash, status, response, created_at FROM idempotency_keys WHERE customer_id = $1 AND key = $2',
    [customerId, idem.key],
  );
  if (!prior) return undefined;
  if (prior.created_at > now - idem.ttlMs) {
    if (!prior.request_hash.equals(Buffer.from(idem.hash))) return { kind: 'conflict' as const };
    return { kind: 'replay' as const, status: prior.status, response: JSON.parse(prior.response) as unknown };
  }
  await q.run('DELETE FROM idempotency_keys WHERE customer_id = $1 AND key = $2', [customerId, idem.key]);
  return undefined;
}

function recordIdempotent(q: Q, customerId: number, idem: { key: string; hash: Uint8Array }, response: unknown, now: number): Promise<number> {
  return q.run('INSERT INTO idempotency_keys (customer_id, key, request_hash, status, response, created_at) VALUES ($1, $2, $3, 202, $4, $5)', [
    customerId,
    idem.key,
    Buffer.from(idem.hash),
    JSON.stringify(response),
    now,
  ]);
}

const INSERT_MESSAGE = `
WITH m AS (
  INSERT INTO messages (customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, request, raw, size, created_at, scheduled_at, tags)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL, $10, $11, $12) RETURNING id),
r AS (
  INSERT INTO recipients (message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, created_at, updated_at)
  SELECT m.id, $1, x.a, x.d, x.f, 'queued', 0, $13, $10, $10 FROM m, unnest($14::text[], $15::text[], $16::text[]) WITH ORDINALITY AS x(a, d, f, o) ORDER BY x.o),
t AS (INSERT INTO message_tags (customer_id, tag, message_id) SELECT $1, tag, m.id FROM m, unnest($17::text[]) AS tag)
SELECT id FROM m`;

/** Stores a message and its recipients (or answers from the idempotency record), in the caller's transaction. */
async function acceptMessage(q: Q, input: AcceptInput): Promise<AcceptResult> {
  const idem = input.idempotency;
  if (idem) {
    const prior = await idempotentAnswer(q, input.customerId, idem, input.now);
    if (prior) return prior;
  }
  const keys = input.recipients.map((r) => addressKey(r.address));
  const found = await q.rows<{ address: string; reason: SuppressionReason }>('SELECT address, reason FROM suppressions WHERE customer_id = $1 AND address = ANY($2::text[])', [input.customerId, keys]);
  if (found.length > 0) {
    const reasons = new Map(found.map((r) => [r.address, r.reason]));
    return {
      kind: 'suppressed',
      addresses: input.recipients.filter((r) => reasons.has(addressKey(r.address))).map((r) => ({ address: r.address, field: r.field, reason: reasons.get(addressKey(r.address))! })),
    };
  }
  const request = typeof input.request === 'string' ? Buffer.from(input.request, 'utf8') : Buffer.from(input.request.buffer, input.request.byteOffset, input.request.byteLength);
  const m = await q.row<{ id: number }>(INSERT_MESSAGE, [
    input.customerId,
    input.messageId,
    input.apiKeyId,
    input.sandbox ? 1 : 0,
    input.fromHeader,
    input.senderDomain,
    input.subject,
    JSON.stringify(input.metadata),
    request,
    input.now,
    input.scheduledAt ?? null,
    input.tags?.length ? JSON.stringify(input.tags) : null,
    input.scheduledAt ?? input.now,
    input.recipients.map((r) => r.address),
    input.recipients.map((r) => r.domain),
    input.recipients.map((r) => r.field),
    input.tags ?? [],
  ]);
  if (idem) await recordIdempotent(q, input.customerId, idem, acceptedResponse(input), input.now);
  return { kind: 'accepted', emailId: m!.id };
}

/** The key, and the sending domain, checked again inside the transaction when the epoch moved. */
async function recheck(q: Q, apiKeyId: string, customerId: number, senderDomain: string | null) {
  const key = await q.row<{ revoked_at: number | null }>('SELECT revoked_at FROM api_keys WHERE id = $1', [apiKeyId]);
  if (!key || key.revoked_at !== null) return 'key_revoked' as const;
  if (senderDomain === null) return undefined;
  return domainRefusal(q, customerId, senderDomain);
}

async function domainRefusal(q: Q, customerId: number, name: string): Promise<'domain_unknown' | 'domain_unverified' | undefined> {
  const d = await q.row<{ customer_id: number; verified_at: number | null }>('SELECT customer_id, verified_at FROM domains WHERE name = $1', [name]);
  if (!d || d.customer_id !== customerId) return 'domain_unknown';
  return d.verified_at === null ? 'domain_unverified' : undefined;
}

/** A concurrent twin with the same Idempotency-Key committed first: run again, and replay its answer. */
const idempotencyRace = (e: unknown) => uniqueViolation(e, 'idempotency_keys_pkey');

async function accept(db: PgDb, input: SendInput): Promise<SendCommit> {
  return db.tx(async (q) => {
    const authEpoch = await readEpoch(q);
    if (authEpoch !== input.authEpoch) {
      const refused = await recheck(q, input.apiKeyId, input.customerId, input.senderDomain);
      if (refused) return { kind: refused, authEpoch };
    }
    return { ...(await acceptMessage(q, input)), authEpoch };
  }, idempotencyRace);
}

async function acceptBatch(db: PgDb, input: BatchInput): Promise<BatchResult> {
  return db.tx(async (q) => {
    const authEpoch = await readEpoch(q);
    const idem = input.idempotency;
    if (idem) {
      const prior = await idempotentAnswer(q, input.customerId, idem, input.now);
      if (prior) return { ...prior, authEpoch };
    }
    const moved = authEpoch !== input.authEpoch;
    if (moved && (await recheck(q, input.apiKeyId, input.customerId, null))) return { kind: 'key_revoked', authEpoch };
    const data: BatchItemResult[] = [];
    for (const item of input.items) {
      if ('error' in item) {
        data.push(item);
        continue;
      }
      const refused = moved ? await domainRefusal(q, item.customerId, item.senderDomain) : undefined;
      if (refused) {
        data.push(refusal({ kind: refused }, item.senderDomain).toBody());
        continue;
      }
      const r = await acceptMessage(q, item);
      data.push(r.kind === 'suppressed' ? refusal(r, item.senderDomain).toBody() : acceptedResponse(item));
    }
    const response = { data };
    if (idem) await recordIdempotent(q, input.customerId, idem, response, input.now);
    return { kind: 'accepted', response, authEpoch };
  }, idempotencyRace);
}

interface MessageRow {
  id: number;
  message_id: string;
  from_header: string;
  subject: string;
  sandbox: number;
  metadata: string;
  size: number | null;
  created_at: number;
  scheduled_at: number | null;
  tags: string | null;
}

async function getMessage(db: PgDb, customerId: number | undefined, messageId: string): Promise<MessageView | undefined> {
  const m = await db.row<MessageRow>(
    'SELECT id, message_id, from_header, subject, sandbox, metadata, size, created_at, scheduled_at, tags FROM messages WHERE message_id = $1 AND ($2::bigint IS NULL OR customer_id = $2)',
    [messageId, customerId ?? null],
  );
  if (!m) return undefined;
  const [recipients, events] = await Promise.all([
    db.rows<{ address: string; field: string; state: RecipientState; attempts: number; next_attempt_at: number | null; last_response: string | null }>(
      'SELECT address, field, state, attempts, next_attempt_at, last_response FROM recipients WHERE message_id = $1 ORDER BY id',
      [m.id],
    ),
    eventsOf(db, m.id),
  ]);
  return {
    email_id: m.id,
    message_id: m.message_id,
    from: m.from_header,
    subject: m.subject,
    sandbox: m.sandbox === 1,
    metadata: JSON.parse(m.metadata) as Record<string, string>,
    size: m.size,
    created_at: new Date(m.created_at).toISOString(),
    scheduled_at: m.scheduled_at !== null ? new Date(m.scheduled_at).toISOString() : null,
    tags: m.tags ? (JSON.parse(m.tags) as string[]) : [],
    recipients: recipients.map((r) => ({
      address: r.address,
      field: r.field,
      state: r.state,
      attempts: r.attempts,
      next_attempt_at: r.next_attempt_at !== null && (r.state === 'queued' || r.state === 'deferred') ? new Date(r.next_attempt_at).toISOString() : null,
      last_response: r.last_response ? (JSON.parse(r.last_response) as unknown) : null,
    })),
    events,
  };
}

async function eventsOf(db: PgDb, messageRowId: number): Promise<EventEnvelope[]> {
  return (await db.rows<{ body: string }>('SELECT body FROM events WHERE message_id = $1 ORDER BY seq', [messageRowId])).map((r) => JSON.parse(r.body) as EventEnvelope);
}

/** Messages of `from` (aliased m) matching `where`, newest first, with their recipients counted per state. */
async function summaries(db: PgDb, from: string, where: string[], values: unknown[], limit: string): Promise<MessageSummary[]> {
  const rows = await db.rows<{ id: number; message_id: string; customer: string; from_header: string; subject: string; sandbox: number; created_at: number; states: Record<string, number> | null }>(
    `SELECT m.id, m.message_id, c.name AS customer, m.from_header, m.subject, m.sandbox, m.created_at,
            (SELECT json_object_agg(state, n) FROM (SELECT state, count(*)::int AS n FROM recipients WHERE message_id = m.id GROUP BY state) s) AS states
     FROM ${from} JOIN customers c ON c.id = m.customer_id
     ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY m.id DESC LIMIT ${limit}`,
    values,
  );
  return rows.map((r) => ({
    email_id: r.id,
    message_id: r.message_id,
    customer: r.customer,
    from: r.from_header,
    subject: r.subject,
    sandbox: r.sandbox === 1,
    created_at: new Date(r.created_at).toISOString(),
    states: r.states ?? {},
  }));
}

function listMessages(db: PgDb, opts: { customerId?: number; state?: string; limit: number; before?: number }): Promise<MessageSummary[]> {
  const { p, values } = params();
  const where: string[] = [];
  if (opts.customerId !== undefined) where.push(`m.customer_id = ${p(opts.customerId)}`);
  if (opts.before !== undefined) where.push(`m.id < ${p(opts.before)}`);
  if (opts.state !== undefined) where.push(`EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state = ${p(opts.state)})`);
  return summaries(db, 'messages m', where, values, p(opts.limit));
}

/** The first message id accepted at or after `t` (ids grow with acceptance time): a binary search over the primary key. */
async function firstIdAt(db: PgDb, t: number): Promise<number> {
  const bounds = await db.row<{ lo: number | null; hi: number | null }>('SELECT min(id) AS lo, max(id) AS hi FROM messages');
  let lo = bounds?.lo ?? 1;
  let hi = (bounds?.hi ?? 0) + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const c = await db.row<{ created_at: number }>('SELECT created_at FROM messages WHERE id >= $1 ORDER BY id LIMIT 1', [mid]);
    if (c === undefined || c.created_at >= t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

const UNDELIVERED = new Set(['deferred', 'bounced', 'complained', 'suppressed', 'canceled']);

/** One customer's messages, newest first, by recipient, Message-ID, tag, state and time; each filter starts from an index. */
async function searchMessages(db: PgDb, s: MessageSearch): Promise<MessageSummary[]> {
  let upper = s.before ?? Number.MAX_SAFE_INTEGER;
  if (s.until !== undefined) upper = Math.min(upper, await firstIdAt(db, s.until));
  const lower = s.since !== undefined ? await firstIdAt(db, s.since) : 0;
  const { p, values } = params();
  const customer = p(s.customerId);
  const where = [`m.customer_id = ${customer}`, `m.id < ${p(upper)}`, `m.id >= ${p(lower)}`];
  let from = 'messages m';
  if (s.messageId !== undefined) where.push(`m.message_id = ${p(s.messageId.replace(/^<|>$/g, ''))}`);
  if (s.recipient !== undefined) {
    from = `(SELECT DISTINCT message_id AS id FROM recipients WHERE address IN (${p(s.recipient)}, ${p(s.recipient.toLowerCase())}) AND customer_id = ${customer}) AS hit JOIN messages m ON m.id = hit.id`;
  }
  if (s.tag !== undefined) where.push(`EXISTS (SELECT 1 FROM message_tags t WHERE t.customer_id = m.customer_id AND t.tag = ${p(s.tag)} AND t.message_id = m.id)`);
  if (s.state !== undefined) {
    // The state is written into the SQL (checked against the states the partial index holds), so
    // the planner sees that the index recipients_undelivered (or recipients_due) covers it.
    if (UNDELIVERED.has(s.state)) where.push(`EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.customer_id = ${customer} AND r.state = '${s.state}')`);
    else if (s.state === 'queued') where.push(`EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state IN ('queued', 'deferred') AND r.state = 'queued')`);
    else where.push(`EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state = ${p(s.state)})`);
  }
  return summaries(db, from, where, values, p(s.limit));
}

function cancelMessage(db: PgDb, customerId: number | undefined, messageId: string, now: number) {
  return db.tx(async (q) => {
    const m = await q.row<{ id: number; customer_id: number }>('SELECT id, customer_id FROM messages WHERE message_id = $1', [messageId.replace(/^<|>$/g, '')]);
    if (!m || (customerId !== undefined && m.customer_id !== customerId)) return { kind: 'not_found' as const };
    // The recipient rows locked first: a claim (FOR NO KEY UPDATE ... SKIP LOCKED) cannot take one
    // between this check and the change.
    const rows = await q.rows<{ state: string; attempts: number; claimed: boolean }>(
      `SELECT r.state, r.attempts, EXISTS (SELECT 1 FROM recipient_claims c WHERE c.recipient_id = r.id) AS claimed
       FROM recipients r WHERE r.message_id = $1 FOR UPDATE OF r`,
      [m.id],
    );
    if (rows.some((r) => r.state !== 'queued' || r.attempts > 0 || r.claimed)) {
      const states: Record<string, number> = {};
      for (const r of rows) {
        const k = r.claimed && r.state === 'queued' ? 'sending' : r.state;
        states[k] = (states[k] ?? 0) + 1;
      }
      return { kind: 'too_late' as const, states };
    }
    await q.run("UPDATE recipients SET state = 'canceled', next_attempt_at = NULL, updated_at = $1 WHERE message_id = $2", [now, m.id]);
    return { kind: 'canceled' as const };
  });
}

export function pgMessages(db: PgDb): MessageStore {
  return {
    accept: (input) => accept(db, input),
    acceptBatch: (input) => acceptBatch(db, input),
    get: (customerId, messageId) => getMessage(db, customerId, messageId),
    list: (opts) => listMessages(db, opts),
    search: (s) => searchMessages(db, s),
    cancel: (customerId, messageId, now) => cancelMessage(db, customerId, messageId, now),
    deliveriesOf: (messageRowId) =>
      db.rows(
        `SELECT e.id AS event_id, e.type, d.endpoint_id, d.state, d.attempts, d.updated_at
         FROM events e JOIN webhook_deliveries d ON d.event_seq = e.seq AND d.kind = 'event'
         WHERE e.message_id = $1 ORDER BY e.seq, d.endpoint_id`,
        [messageRowId],
      ),
    events: (messageRowId) => eventsOf(db, messageRowId),
    content: async (customerId, messageId) => {
      const row = await db.row<{ request: Buffer; raw: Buffer | null }>('SELECT request, raw FROM messages WHERE message_id = $1 AND customer_id = $2', [messageId, customerId]);
      if (!row) return undefined;
      // Retention leaves a marker where the body was (store/retention.ts).
      return { request: row.request.toString() === '{"purged":true}' ? null : row.request, composed: row.raw };
    },
  };
}
