import { bareMessageId } from '../../domain/message-search.js';
import {
  type AcceptInput,
  type AcceptResult,
  acceptedResponse,
  type IdempotencyRecord,
  type IdempotentAnswer,
  idempotencyRecord,
  idempotencyVerdict,
  type MessageSearch,
  type MessageSummary,
  type MessageView,
  type RequestFormat,
  type StoredContent,
  suppressedRefusal,
} from '../model.js';
import type { MessageStore } from '../store.js';
import {
  acceptedColumns,
  MESSAGE_VIEW_COLUMNS,
  type MessageRow,
  type MessageSummaryRow,
  messageSummaryView,
  messageView,
  RECIPIENT_VIEW_COLUMNS,
  type RecipientRow,
} from '../views.js';
import { BOUND_LIMIT, type Db } from './db.js';
import { eventsOfMessage } from './events.js';
import { takeQuota } from './quotas.js';
import { findSuppressed } from './suppressions.js';
import { deliveriesOfMessage } from './webhooks.js';

const byteLength = (b: Uint8Array | string) => (typeof b === 'string' ? Buffer.byteLength(b) : b.byteLength);

// The accept path is the hottest write: plain SQL on cached statements (no query building per request).
const SQL = {
  idemGet: 'SELECT request_hash, status, response, created_at FROM idempotency_keys WHERE customer_id = ? AND key = ?',
  idemDelete: 'DELETE FROM idempotency_keys WHERE customer_id = ? AND key = ?',
  idemInsert:
    'INSERT INTO idempotency_keys (customer_id, key, request_hash, status, response, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  message: `INSERT INTO messages (customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, request, request_format, raw, size, created_at, scheduled_at, tags, header_message_id, pool, unsubscribe)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS BLOB), ?, NULL, ?, ?, ?, ?, ?, ?, ?)`,
  tag: 'INSERT INTO message_tags (customer_id, tag, message_id) VALUES (?, ?, ?)',
  recipient: `INSERT INTO recipients (message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, created_at, updated_at)
              VALUES (?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?)`,
};

/**
 * Stores a message and its recipients (or answers from the idempotency record), all in the
 * caller's transaction. Idempotency first: a retried request gets its first response even if a
 * recipient was suppressed since. Suppressions are checked here, inside the transaction, so a
 * suppression committed before this message cannot be missed.
 */
export function acceptMessage(db: Db, input: AcceptInput): AcceptResult {
  const idem = input.idempotency;
  if (idem) {
    const prior = idempotentAnswer(db, input.customerId, idem, input.now);
    if (prior) return prior;
  }

  const suppressed = findSuppressed(
    db,
    input.customerId,
    input.recipients.map((r) => r.address),
  );
  if (suppressed.size > 0) return suppressedRefusal(input.recipients, (key) => suppressed.get(key));
  const over = takeQuota(db, input);
  if (over) return { kind: 'rate_limited', quota: over };

  const c = acceptedColumns(input);
  const emailId = Number(
    db.run(
      SQL.message,
      input.customerId,
      input.messageId,
      input.apiKeyId,
      c.sandbox,
      input.fromHeader,
      input.senderDomain,
      input.subject,
      c.metadata,
      input.request,
      c.requestFormat,
      // A submitted message is stored as it is sent: its size is known now.
      input.requestFormat === 'mime' ? byteLength(input.request) : null,
      input.now,
      c.scheduledAt,
      c.tags,
      c.headerMessageId,
      c.pool,
      c.unsubscribe,
    ).lastInsertRowid,
  );
  for (const r of input.recipients)
    db.run(
      SQL.recipient,
      emailId,
      input.customerId,
      r.address,
      r.domain,
      r.field,
      c.firstAttemptAt,
      input.now,
      input.now,
    );
  for (const tag of input.tags ?? []) db.run(SQL.tag, input.customerId, tag, emailId);

  if (idem) recordIdempotent(db, input.customerId, idem, acceptedResponse(input), input.now);
  return { kind: 'accepted', emailId };
}

/**
 * What an Idempotency-Key already answered, if its record is still fresh (model/messages.ts,
 * idempotencyVerdict); a stale record is removed. In the caller's transaction.
 */
export function idempotentAnswer(
  db: Db,
  customerId: number,
  idem: { key: string; hash: Uint8Array; ttlMs: number },
  now: number,
): IdempotentAnswer | undefined {
  const prior = db.get<IdempotencyRecord>(SQL.idemGet, customerId, idem.key);
  const verdict = idempotencyVerdict(prior, idem, now);
  if (verdict !== 'expired') return verdict;
  db.run(SQL.idemDelete, customerId, idem.key);
  return undefined;
}

/** Records an accepted request's answer under its Idempotency-Key, in the transaction that stored what it answers. */
export function recordIdempotent(
  db: Db,
  customerId: number,
  idem: { key: string; hash: Uint8Array },
  response: unknown,
  now: number,
): void {
  const r = idempotencyRecord(response);
  db.run(SQL.idemInsert, customerId, idem.key, idem.hash, r.status, r.response, now);
}

/** A message with its recipients and events, or undefined (unknown, or another customer's). */
export function getMessage(db: Db, customerId: number | undefined, messageId: string): MessageView | undefined {
  const m =
    customerId === undefined
      ? db.get<MessageRow>(`SELECT ${MESSAGE_VIEW_COLUMNS} FROM messages WHERE message_id = ?`, messageId)
      : db.get<MessageRow>(
          `SELECT ${MESSAGE_VIEW_COLUMNS} FROM messages WHERE message_id = ? AND customer_id = ?`,
          messageId,
          customerId,
        );
  if (!m) return undefined;
  return messageView(
    m,
    db.all<RecipientRow>(`SELECT ${RECIPIENT_VIEW_COLUMNS} FROM recipients WHERE message_id = ? ORDER BY id`, m.id),
    eventsOfMessage(db, m.id),
  );
}

/** What retention leaves of a finished message's request (store/sqlite/retention.ts). */
const PURGED_REQUEST = '{"purged":true}';

/** A message's stored content, or undefined (unknown, or another customer's). */
export function messageContent(db: Db, customerId: number, messageId: string): StoredContent | undefined {
  const row = db.get<{ request: Buffer | string; request_format: RequestFormat; raw: Buffer | null }>(
    'SELECT request, request_format, raw FROM messages WHERE message_id = ? AND customer_id = ?',
    messageId,
    customerId,
  );
  if (!row) return undefined;
  // Written as a BLOB; rows of earlier builds, and retention's marker, are text.
  const request =
    typeof row.request === 'string' ? (row.request === PURGED_REQUEST ? null : Buffer.from(row.request)) : row.request;
  return { request, format: row.request_format, composed: row.raw };
}

/** Messages of `from` (aliased m) matching `where`, newest first, as summaries with their recipients counted per state. */
function summaries(db: Db, from: string, where: string[], args: unknown[], limit: number): MessageSummary[] {
  const rows = db.sqlite
    .prepare(
      `SELECT m.id, m.message_id, m.header_message_id, c.name AS customer, m.from_header, m.subject, m.sandbox, m.created_at,
              (SELECT json_group_object(state, n) FROM (SELECT state, COUNT(*) AS n FROM recipients WHERE message_id = m.id GROUP BY state)) AS states
       FROM ${from} JOIN customers c ON c.id = m.customer_id
       ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY m.id DESC ${BOUND_LIMIT}`,
    )
    .all(...args, limit) as Array<MessageSummaryRow & { states: string }>;
  return rows.map((r) => messageSummaryView(r, JSON.parse(r.states) as Record<string, number>));
}

/** Newest first, paged by email_id (`before`), optionally one customer's or those with a recipient in `state`. */
export function listMessages(
  db: Db,
  opts: { customerId?: number; state?: string; limit: number; before?: number },
): MessageSummary[] {
  const where: string[] = [];
  const args: unknown[] = [];
  const and = (condition: string, arg: unknown) => {
    where.push(condition);
    args.push(arg);
  };
  if (opts.customerId !== undefined) and('m.customer_id = ?', opts.customerId);
  if (opts.before !== undefined) and('m.id < ?', opts.before);
  if (opts.state !== undefined)
    and('EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state = ?)', opts.state);
  return summaries(db, 'messages m', where, args, opts.limit);
}

/** The states recipients_undelivered holds; the value itself, checked, to be written into SQL. */
const UNDELIVERED = new Set(['deferred', 'bounced', 'complained', 'suppressed', 'canceled']);
function undeliveredState(state: string): string {
  if (!UNDELIVERED.has(state)) throw new Error(`not an undelivered state: ${state}`);
  return state;
}

/**
 * The first email_id accepted at or after `t`. Ids grow with acceptance time (one writer assigns
 * both), so a binary search over the rowid finds it in about 20 index probes at a million messages,
 * where a filter on created_at would scan.
 */
function firstIdAt(db: Db, t: number): number {
  const ids = db.get<{ lo: number | null; hi: number | null }>('SELECT MIN(id) AS lo, MAX(id) AS hi FROM messages')!;
  let lo = ids.lo ?? 1;
  let hi = (ids.hi ?? 0) + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const c = db.get<{ created_at: number }>(
      'SELECT created_at FROM messages WHERE id >= ? ORDER BY id LIMIT 1',
      mid,
    )?.created_at;
    if (c === undefined || c >= t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * One customer's messages, newest first, by recipient, Message-ID, state and time. Each filter
 * starts from an index (recipients_address, the unique Message-ID, message_tags,
 * recipients_undelivered or recipients_due for the states, the rowid for time), so a page costs the same at a
 * thousand messages and at a million.
 */
export function searchMessages(db: Db, s: MessageSearch): MessageSummary[] {
  let upper = s.before ?? Number.MAX_SAFE_INTEGER;
  if (s.until !== undefined) upper = Math.min(upper, firstIdAt(db, s.until));
  const lower = s.since !== undefined ? firstIdAt(db, s.since) : 0;
  const where = ['m.customer_id = ?', 'm.id < ?', 'm.id >= ?'];
  const args: unknown[] = [s.customerId, upper, lower];
  let from = 'messages m';
  if (s.messageId !== undefined) {
    // posthaste's id (unique) or the Message-ID field's (messages_header_message_id), each from its index.
    where.push(
      'm.id IN (SELECT id FROM messages WHERE message_id = ? UNION ALL SELECT id FROM messages WHERE customer_id = ? AND header_message_id = ?)',
    );
    const id = bareMessageId(s.messageId);
    args.push(id, s.customerId, id);
  }
  const tagged = () => {
    where.push(
      'EXISTS (SELECT 1 FROM message_tags t WHERE t.customer_id = m.customer_id AND t.tag = ? AND t.message_id = m.id)',
    );
    args.push(s.tag);
  };
  if (s.recipient !== undefined) {
    // The recipients of one address, few: their messages, distinct, then the other filters.
    // Addresses are stored as sent; the domain is lower-case, the local part usually too.
    from = `(SELECT DISTINCT message_id AS id FROM recipients WHERE address IN (?, ?) AND customer_id = ?${s.state ? ' AND state = ?' : ''}) AS hit JOIN messages m ON m.id = hit.id`;
    args.unshift(s.recipient, s.recipient.toLowerCase(), s.customerId, ...(s.state ? [s.state] : []));
    if (s.tag !== undefined) tagged();
  } else if (s.tag !== undefined) {
    // The tag's messages through message_tags, newest first; a page's worth unless a state
    // filter follows (then as many as it takes).
    from = `(SELECT message_id AS id FROM message_tags WHERE customer_id = ? AND tag = ? AND message_id < ? AND message_id >= ? ORDER BY message_id DESC${s.state ? '' : ' LIMIT ? + 0'}) AS hit JOIN messages m ON m.id = hit.id`;
    args.unshift(s.customerId, s.tag, upper, lower, ...(s.state ? [] : [s.limit]));
    if (s.state !== undefined) {
      where.push('EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state = ?)');
      args.push(s.state);
    }
  } else if (s.state !== undefined && s.state !== 'queued' && s.state !== 'delivered') {
    // The partial index recipients_undelivered, newest first. The state is written into the SQL
    // (one of SEARCH_STATES, checked by the caller's parser): SQLite uses a partial index only for
    // a condition it can see implies the index's, and a bound parameter shows nothing.
    from = `(SELECT DISTINCT message_id AS id FROM recipients WHERE customer_id = ? AND state = '${undeliveredState(s.state)}' AND message_id < ? AND message_id >= ? ORDER BY message_id DESC LIMIT ? + 0) AS hit JOIN messages m ON m.id = hit.id`;
    args.unshift(s.customerId, upper, lower, s.limit);
  } else if (s.state === 'queued') {
    // The partial index recipients_due is used only when the query repeats its condition.
    from = `(SELECT DISTINCT message_id AS id FROM recipients WHERE state IN ('queued', 'deferred') AND state = ? AND customer_id = ?) AS hit JOIN messages m ON m.id = hit.id`;
    args.unshift(s.state, s.customerId);
  } else if (s.state !== undefined) {
    where.push('EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state = ?)');
    args.push(s.state);
  }
  return summaries(db, from, where, args, s.limit);
}

/**
 * Messages on SQLite: accepting a send or a batch is the write given (store/sqlite/index.ts: the
 * writer thread's group commit when the daemon has one); the reads run on the process's connection.
 */
export function sqliteMessages(db: Db, writes: Pick<MessageStore, 'accept' | 'acceptBatch'>): MessageStore {
  return {
    accept: writes.accept,
    acceptBatch: writes.acceptBatch,
    get: async (customerId, messageId) => getMessage(db, customerId, messageId),
    list: async (opts) => listMessages(db, opts),
    search: async (s) => searchMessages(db, s),
    deliveriesOf: async (messageRowId) => deliveriesOfMessage(db, messageRowId),
    events: async (messageRowId) => eventsOfMessage(db, messageRowId),
    content: async (customerId, messageId) => messageContent(db, customerId, messageId),
  };
}
