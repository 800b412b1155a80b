import type { EventEnvelope } from '../../domain/events.js';
import { bareMessageId } from '../../domain/message-search.js';
import type { BatchInput, BatchItem, BatchResult, RequestFormat, SendCommit, SendInput } from '../model.js';
import {
  acceptedResponse,
  batchAnswer,
  DELIVERIES_OF_MESSAGE,
  type IdempotencyRecord,
  type IdempotentAnswer,
  idempotencyRecord,
  idempotencyVerdict,
  type MessageHookDelivery,
  type MessageSearch,
  type MessageSummary,
  type MessageView,
} from '../model.js';
import type { MessageStore } from '../store.js';
import {
  MESSAGE_VIEW_COLUMNS,
  type MessageRow,
  type MessageSummaryRow,
  messageSummaryView,
  messageView,
  RECIPIENT_VIEW_COLUMNS,
  type RecipientRow,
} from '../views.js';
import { AcceptGroups, acceptMany } from './accept-many.js';
import { type PgDb, type Q, uniqueViolation } from './db.js';

/**
 * Messages on PostgreSQL: the send path's commit and the reads the API and dashboard make.
 * A send is one statement (ACCEPT_MANY) that checks the key, the sending domain and the
 * suppressions and inserts the message with its recipients and tags; sends that arrive together
 * share one statement and one commit (AcceptGroups, store/pg/accept-many.ts), as the SQLite
 * writer's group commit does.
 */

/** Positional parameters for a query built in pieces: `p(v)` adds v and gives its `$n`. */
function params(): { p: (v: unknown) => string; values: unknown[] } {
  const values: unknown[] = [];
  return { p: (v) => `$${values.push(v)}`, values };
}

async function readEpoch(q: Q): Promise<string> {
  return (await q.row<{ value: string }>("SELECT value FROM settings WHERE name = 'auth_epoch'"))?.value ?? '';
}

/** What an Idempotency-Key already answered, if its record is still fresh (model/messages.ts, idempotencyVerdict); a stale record is removed. */
async function idempotentAnswer(
  q: Q,
  customerId: number,
  idem: { key: string; hash: Uint8Array; ttlMs: number },
  now: number,
): Promise<IdempotentAnswer | undefined> {
  const prior = await q.row<IdempotencyRecord>(
    'SELECT request_hash, status, response, created_at FROM idempotency_keys WHERE customer_id = $1 AND key = $2',
    [customerId, idem.key],
  );
  const verdict = idempotencyVerdict(prior, idem, now);
  if (verdict !== 'expired') return verdict;
  await q.run('DELETE FROM idempotency_keys WHERE customer_id = $1 AND key = $2', [customerId, idem.key]);
  return undefined;
}

/** Records an accepted request's answer under its Idempotency-Key, in the transaction that stored what it answers. */
function recordIdempotent(
  q: Q,
  customerId: number,
  idem: { key: string; hash: Uint8Array },
  response: unknown,
  now: number,
): Promise<number> {
  const r = idempotencyRecord(response);
  return q.run(
    'INSERT INTO idempotency_keys (customer_id, key, request_hash, status, response, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
    [customerId, idem.key, Buffer.from(idem.hash), r.status, r.response, now],
  );
}

/** A concurrent twin with the same Idempotency-Key committed first: run again, and replay its answer. */
const idempotencyRace = (e: unknown) => uniqueViolation(e, 'idempotency_keys_pkey');

async function acceptIdempotent(
  db: PgDb,
  input: SendInput & { idempotency: NonNullable<SendInput['idempotency']> },
): Promise<SendCommit> {
  return db.tx(async (q) => {
    const prior = await idempotentAnswer(q, input.customerId, input.idempotency, input.now);
    const { results, epoch } = prior ? { results: [prior], epoch: await readEpoch(q) } : await acceptMany(q, [input]);
    const r = results[0]!;
    if (!prior && r.kind === 'accepted')
      await recordIdempotent(q, input.customerId, input.idempotency, acceptedResponse(input), input.now);
    return { ...r, authEpoch: epoch };
  }, idempotencyRace);
}

async function acceptBatch(db: PgDb, input: BatchInput): Promise<BatchResult> {
  return db.tx(async (q) => {
    const idem = input.idempotency;
    if (idem) {
      const prior = await idempotentAnswer(q, input.customerId, idem, input.now);
      if (prior) return { ...prior, authEpoch: await readEpoch(q) };
    }
    const items = input.items.filter((item): item is Exclude<BatchItem, { error: unknown }> => !('error' in item));
    if (items.length === 0) {
      const key = await q.row<{ revoked_at: number | null }>('SELECT revoked_at FROM api_keys WHERE id = $1', [
        input.apiKeyId,
      ]);
      if (!key || key.revoked_at !== null) return { kind: 'key_revoked', authEpoch: await readEpoch(q) };
    }
    const { results, epoch } = items.length ? await acceptMany(q, items) : { results: [], epoch: await readEpoch(q) };
    if (results.some((r) => r.kind === 'key_revoked')) return { kind: 'key_revoked', authEpoch: epoch };
    const answers = new Map(items.map((item, i) => [item, results[i]!]));
    const response = batchAnswer(input.items, (item) => answers.get(item)!);
    if (idem) await recordIdempotent(q, input.customerId, idem, response, input.now);
    return { kind: 'accepted', response, authEpoch: epoch };
  }, idempotencyRace);
}

async function getMessage(
  db: PgDb,
  customerId: number | undefined,
  messageId: string,
): Promise<MessageView | undefined> {
  const m = await db.row<MessageRow>(
    `SELECT ${MESSAGE_VIEW_COLUMNS} FROM messages WHERE message_id = $1 AND ($2::bigint IS NULL OR customer_id = $2)`,
    [messageId, customerId ?? null],
  );
  if (!m) return undefined;
  const [recipients, events] = await Promise.all([
    db.rows<RecipientRow>(`SELECT ${RECIPIENT_VIEW_COLUMNS} FROM recipients WHERE message_id = $1 ORDER BY id`, [m.id]),
    eventsOf(db, m.id),
  ]);
  return messageView(m, recipients, events);
}

async function eventsOf(db: PgDb, messageRowId: number): Promise<EventEnvelope[]> {
  return (
    await db.rows<{ body: string }>('SELECT body FROM events WHERE message_id = $1 ORDER BY seq', [messageRowId])
  ).map((r) => JSON.parse(r.body) as EventEnvelope);
}

/** Messages of `from` (aliased m) matching `where`, newest first, with their recipients counted per state. */
async function summaries(
  db: PgDb,
  from: string,
  where: string[],
  values: unknown[],
  limit: string,
): Promise<MessageSummary[]> {
  const rows = await db.rows<MessageSummaryRow & { states: Record<string, number> | null }>(
    `SELECT m.id, m.message_id, m.header_message_id, c.name AS customer, m.from_header, m.subject, m.sandbox, m.created_at,
            (SELECT json_object_agg(state, n) FROM (SELECT state, count(*)::int AS n FROM recipients WHERE message_id = m.id GROUP BY state) s) AS states
     FROM ${from} JOIN customers c ON c.id = m.customer_id
     ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY m.id DESC LIMIT ${limit}`,
    values,
  );
  return rows.map((r) => messageSummaryView(r, r.states ?? {}));
}

function listMessages(
  db: PgDb,
  opts: { customerId?: number; state?: string; limit: number; before?: number },
): Promise<MessageSummary[]> {
  const { p, values } = params();
  const where: string[] = [];
  if (opts.customerId !== undefined) where.push(`m.customer_id = ${p(opts.customerId)}`);
  if (opts.before !== undefined) where.push(`m.id < ${p(opts.before)}`);
  if (opts.state !== undefined)
    where.push(`EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state = ${p(opts.state)})`);
  return summaries(db, 'messages m', where, values, p(opts.limit));
}

/** The first message id accepted at or after `t` (ids grow with acceptance time): a binary search over the primary key. */
async function firstIdAt(db: PgDb, t: number): Promise<number> {
  const bounds = await db.row<{ lo: number | null; hi: number | null }>(
    'SELECT min(id) AS lo, max(id) AS hi FROM messages',
  );
  let lo = bounds?.lo ?? 1;
  let hi = (bounds?.hi ?? 0) + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const c = await db.row<{ created_at: number }>(
      'SELECT created_at FROM messages WHERE id >= $1 ORDER BY id LIMIT 1',
      [mid],
    );
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
  if (s.messageId !== undefined) {
    // posthaste's id (unique) or the Message-ID field's (messages_header_message_id), each from its index.
    const id = p(bareMessageId(s.messageId));
    where.push(
      `m.id IN (SELECT id FROM messages WHERE message_id = ${id} UNION ALL SELECT id FROM messages WHERE customer_id = ${customer} AND header_message_id = ${id})`,
    );
  }
  if (s.recipient !== undefined) {
    from = `(SELECT DISTINCT message_id AS id FROM recipients WHERE address IN (${p(s.recipient)}, ${p(s.recipient.toLowerCase())}) AND customer_id = ${customer}) AS hit JOIN messages m ON m.id = hit.id`;
  }
  if (s.tag !== undefined)
    where.push(
      `EXISTS (SELECT 1 FROM message_tags t WHERE t.customer_id = m.customer_id AND t.tag = ${p(s.tag)} AND t.message_id = m.id)`,
    );
  if (s.state !== undefined) {
    // The state is written into the SQL (checked against the states the partial index holds), so
    // the planner sees that the index recipients_undelivered (or recipients_due) covers it.
    if (UNDELIVERED.has(s.state))
      where.push(
        `EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.customer_id = ${customer} AND r.state = '${s.state}')`,
      );
    else if (s.state === 'queued')
      where.push(
        `EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state IN ('queued', 'deferred') AND r.state = 'queued')`,
      );
    else where.push(`EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state = ${p(s.state)})`);
  }
  return summaries(db, from, where, values, p(s.limit));
}

export function pgMessages(db: PgDb): MessageStore {
  const groups = new AcceptGroups(db, Math.max(1, Math.floor(db.max / 3)));
  return {
    accept: (input) =>
      input.idempotency ? acceptIdempotent(db, { ...input, idempotency: input.idempotency }) : groups.accept(input),
    acceptBatch: (input) => acceptBatch(db, input),
    get: (customerId, messageId) => getMessage(db, customerId, messageId),
    list: (opts) => listMessages(db, opts),
    search: (s) => searchMessages(db, s),
    deliveriesOf: (messageRowId) => db.rows<MessageHookDelivery>(DELIVERIES_OF_MESSAGE, [messageRowId]),
    events: (messageRowId) => eventsOf(db, messageRowId),
    content: async (customerId, messageId) => {
      const row = await db.row<{ request: Buffer; request_format: RequestFormat; raw: Buffer | null }>(
        'SELECT request, request_format, raw FROM messages WHERE message_id = $1 AND customer_id = $2',
        [messageId, customerId],
      );
      if (!row) return undefined;
      // Retention leaves a marker where the body was (store/pg/retention.ts).
      return {
        request: row.request.toString() === '{"purged":true}' ? null : row.request,
        format: row.request_format,
        composed: row.raw,
      };
    },
  };
}
