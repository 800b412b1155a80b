import { MESSAGE_VIEW_COLUMNS, RECIPIENT_VIEW_COLUMNS, messageView, type MessageRow, type RecipientRow } from '../views.js';
import { uniqueViolation, type PgDb, type Q } from './db.js';
import type { MessageStore } from '../store.js';
import { acceptedResponse, type AcceptInput, type AcceptResult, type MessageSearch, type MessageSummary, type MessageView } from '../model.js';
import type { BatchInput, BatchItem, BatchItemResult, BatchResult, SendCommit, SendInput } from '../model.js';
import { isStoreUnavailable } from '../errors.js';
import type { RequestFormat, SuppressionReason } from '../model.js';
import { addressKey } from '../../domain/addresses.js';
import { refusal, type Refusal } from '../../domain/errors.js';
import type { EventEnvelope } from '../../domain/events.js';

/**
 * Messages on PostgreSQL: the send path's commit and the reads the API and dashboard make.
 * A send is one statement (ACCEPT_MANY) that checks the key, the sending domain and the
 * suppressions and inserts the message with its recipients and tags; sends that arrive together
 * share one statement and one commit (AcceptGroups), as the SQLite writer's group commit does.
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

/**
 * Stores any number of messages in one statement: each one's key (not revoked), sending domain
 * (the customer's, verified) and recipients (none suppressed) checked, and those that pass
 * inserted with their recipients and tags (a submitted MIME message with its size, known now). Answers one row per message, in order: why it was
 * refused, or its row id; with the auth epoch the statement saw.
 */
const ACCEPT_MANY = `
WITH i AS (
  SELECT u.*, substring($21::bytea FROM (sum(u.size) OVER (ORDER BY u.n) - u.size + 1)::int FOR u.size) AS request
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::bigint[], $11::bigint[], $12::text[], $13::bigint[], $22::text[])
    WITH ORDINALITY AS u(customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, size, created_at, scheduled_at, tags, next_at, format, n)),
rin AS (SELECT * FROM unnest($14::int[], $15::text[], $16::text[], $17::text[], $18::text[]) WITH ORDINALITY AS r(n, address, domain, field, key, o)),
checked AS (
  SELECT i.n,
         CASE WHEN i.api_key_id IS NOT NULL AND (k.id IS NULL OR k.revoked_at IS NOT NULL) THEN 'key_revoked'
              WHEN d.id IS NULL OR d.customer_id <> i.customer_id THEN 'domain_unknown'
              WHEN d.verified_at IS NULL THEN 'domain_unverified' END AS refused,
         (SELECT json_object_agg(s.address, s.reason) FROM rin JOIN suppressions s ON s.customer_id = i.customer_id AND s.address = rin.key WHERE rin.n = i.n) AS suppressed
  FROM i LEFT JOIN api_keys k ON k.id = i.api_key_id LEFT JOIN domains d ON d.name = i.sender_domain),
ok AS (SELECT i.* FROM i JOIN checked c USING (n) WHERE c.refused IS NULL AND c.suppressed IS NULL),
m AS (
  INSERT INTO messages (customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, request, request_format, raw, size, created_at, scheduled_at, tags)
  SELECT customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, request, format, NULL,
         CASE WHEN format = 'mime' THEN size END, created_at, scheduled_at, tags FROM ok ORDER BY n
  RETURNING id, message_id),
mi AS (SELECT m.id, ok.n, ok.customer_id, ok.created_at, ok.next_at FROM m JOIN ok USING (message_id)),
r AS (
  INSERT INTO recipients (message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, created_at, updated_at)
  SELECT mi.id, mi.customer_id, rin.address, rin.domain, rin.field, 'queued', 0, mi.next_at, mi.created_at, mi.created_at FROM mi JOIN rin USING (n) ORDER BY rin.o),
t AS (INSERT INTO message_tags (customer_id, tag, message_id) SELECT mi.customer_id, tg.tag, mi.id FROM mi JOIN unnest($19::int[], $20::text[]) AS tg(n, tag) USING (n))
SELECT c.n, c.refused, c.suppressed, mi.id, (SELECT value FROM settings WHERE name = 'auth_epoch') AS epoch
FROM checked c LEFT JOIN mi USING (n) ORDER BY c.n`;

type Checked = { kind: 'key_revoked' | 'domain_unknown' | 'domain_unverified' } | AcceptResult;

/** Stores `inputs` with ACCEPT_MANY: each one's answer, and the auth epoch. */
async function acceptMany(q: Q, inputs: Array<Omit<AcceptInput, 'idempotency'>>): Promise<{ results: Checked[]; epoch: string }> {
  const n = inputs.length;
  const cols = Array.from({ length: 13 }, () => new Array<unknown>(n));
  const rin: unknown[][] = [[], [], [], [], []];
  const tags: unknown[][] = [[], []];
  const requests = inputs.map((x) => (typeof x.request === 'string' ? Buffer.from(x.request, 'utf8') : Buffer.from(x.request.buffer, x.request.byteOffset, x.request.byteLength)));
  inputs.forEach((x, i) => {
    const values = [
      x.customerId,
      x.messageId,
      x.apiKeyId,
      x.sandbox ? 1 : 0,
      x.fromHeader,
      x.senderDomain,
      x.subject,
      JSON.stringify(x.metadata),
      requests[i]!.length,
      x.now,
      x.scheduledAt ?? null,
      x.tags?.length ? JSON.stringify(x.tags) : null,
      x.scheduledAt ?? x.now,
    ];
    for (const [c, v] of values.entries()) cols[c]![i] = v;
    for (const r of x.recipients) {
      rin[0]!.push(i + 1);
      rin[1]!.push(r.address);
      rin[2]!.push(r.domain);
      rin[3]!.push(r.field);
      rin[4]!.push(addressKey(r.address));
    }
    for (const tag of x.tags ?? []) {
      tags[0]!.push(i + 1);
      tags[1]!.push(tag);
    }
  });
  const rows = await q.rows<{ refused: 'key_revoked' | 'domain_unknown' | 'domain_unverified' | null; suppressed: Record<string, SuppressionReason> | null; id: number | null; epoch: string | null }>(
    ACCEPT_MANY,
    [...cols, ...rin, ...tags, Buffer.concat(requests), inputs.map((x) => x.requestFormat ?? 'json')],
  );
  const results = rows.map((row, i): Checked => {
    if (row.refused) return { kind: row.refused };
    if (row.suppressed) {
      const reasons = row.suppressed;
      const recipients = inputs[i]!.recipients;
      return { kind: 'suppressed', addresses: recipients.filter((r) => reasons[addressKey(r.address)]).map((r) => ({ address: r.address, field: r.field, reason: reasons[addressKey(r.address)]! })) };
    }
    return { kind: 'accepted', emailId: row.id! };
  });
  return { results, epoch: rows[0]?.epoch ?? '' };
}

function requestBytes(r: Uint8Array | string): number {
  return typeof r === 'string' ? r.length : r.byteLength;
}

/** A concurrent twin with the same Idempotency-Key committed first: run again, and replay its answer. */
const idempotencyRace = (e: unknown) => uniqueViolation(e, 'idempotency_keys_pkey');

/**
 * The sends without an Idempotency-Key, grouped: those that arrive while earlier groups are being
 * written go together in the next statement, one commit for all of them (as the SQLite writer's
 * group commit does). A group that fails for any reason but the database's absence is written
 * again one send at a time, so one send's error is its own.
 */
class AcceptGroups {
  private waiting: Array<{ input: SendInput; resolve: (c: SendCommit) => void; reject: (e: unknown) => void }> = [];
  private running = 0;
  constructor(
    private readonly db: PgDb,
    private readonly concurrency: number,
  ) {}

  accept(input: SendInput): Promise<SendCommit> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      this.pump();
    });
  }

  /**
   * Starts the next group when none is being written, or when a full group waits and fewer than
   * `concurrency` are. A group costs the database about as much for one send as for ten (the
   * statement, its triggers and the commit), so a second statement started for the one send that
   * just arrived makes every send dearer; sends wait for the running group instead, and a full
   * group is the sign that one statement at a time no longer keeps up.
   */
  private pump(): void {
    while (this.running < this.concurrency && this.waiting.length > 0) {
      let take = 0;
      let bytes = 0;
      for (; take < this.waiting.length && take < AcceptGroups.MAX && (take === 0 || bytes < AcceptGroups.MAX_BYTES); take++) bytes += requestBytes(this.waiting[take]!.input.request);
      const full = take === AcceptGroups.MAX || bytes >= AcceptGroups.MAX_BYTES;
      if (this.running > 0 && !full) return;
      const group = this.waiting.splice(0, take);
      this.running++;
      void this.write(group).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  /** At most this many sends in one statement, and no more once their bodies pass MAX_BYTES. */
  private static readonly MAX = 200;
  private static readonly MAX_BYTES = 16 * 2 ** 20;

  private async write(group: AcceptGroups['waiting']): Promise<void> {
    try {
      const { results, epoch } = await acceptMany(
        this.db,
        group.map((g) => g.input),
      );
      for (const [i, g] of group.entries()) g.resolve({ ...results[i]!, authEpoch: epoch });
    } catch (e) {
      if (group.length === 1 || isStoreUnavailable(e)) {
        for (const g of group) g.reject(e);
        return;
      }
      for (const g of group) {
        try {
          const { results, epoch } = await acceptMany(this.db, [g.input]);
          g.resolve({ ...results[0]!, authEpoch: epoch });
        } catch (e1) {
          g.reject(e1);
        }
      }
    }
  }
}

async function acceptIdempotent(db: PgDb, input: SendInput & { idempotency: NonNullable<SendInput['idempotency']> }): Promise<SendCommit> {
  return db.tx(async (q) => {
    const prior = await idempotentAnswer(q, input.customerId, input.idempotency, input.now);
    const { results, epoch } = prior ? { results: [prior], epoch: await readEpoch(q) } : await acceptMany(q, [input]);
    const r = results[0]!;
    if (!prior && r.kind === 'accepted') await recordIdempotent(q, input.customerId, input.idempotency, acceptedResponse(input), input.now);
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
      const key = await q.row<{ revoked_at: number | null }>('SELECT revoked_at FROM api_keys WHERE id = $1', [input.apiKeyId]);
      if (!key || key.revoked_at !== null) return { kind: 'key_revoked', authEpoch: await readEpoch(q) };
    }
    const { results, epoch } = items.length ? await acceptMany(q, items) : { results: [], epoch: await readEpoch(q) };
    if (results.some((r) => r.kind === 'key_revoked')) return { kind: 'key_revoked', authEpoch: epoch };
    const answers = new Map(items.map((item, i) => [item, results[i]!]));
    const data = input.items.map((item): BatchItemResult => {
      if ('error' in item) return item;
      const r = answers.get(item)!;
      if (r.kind === 'accepted') return acceptedResponse(item);
      return refusal(r as Refusal, item.senderDomain).toBody();
    });
    const response = { data };
    if (idem) await recordIdempotent(q, input.customerId, idem, response, input.now);
    return { kind: 'accepted', response, authEpoch: epoch };
  }, idempotencyRace);
}

async function getMessage(db: PgDb, customerId: number | undefined, messageId: string): Promise<MessageView | undefined> {
  const m = await db.row<MessageRow>(`SELECT ${MESSAGE_VIEW_COLUMNS} FROM messages WHERE message_id = $1 AND ($2::bigint IS NULL OR customer_id = $2)`, [messageId, customerId ?? null]);
  if (!m) return undefined;
  const [recipients, events] = await Promise.all([db.rows<RecipientRow>(`SELECT ${RECIPIENT_VIEW_COLUMNS} FROM recipients WHERE message_id = $1 ORDER BY id`, [m.id]), eventsOf(db, m.id)]);
  return messageView(m, recipients, events);
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
  const groups = new AcceptGroups(db, Math.max(1, Math.floor(db.max / 3)));
  return {
    accept: (input) => (input.idempotency ? acceptIdempotent(db, { ...input, idempotency: input.idempotency }) : groups.accept(input)),
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
      const row = await db.row<{ request: Buffer; request_format: RequestFormat; raw: Buffer | null }>('SELECT request, request_format, raw FROM messages WHERE message_id = $1 AND customer_id = $2', [
        messageId,
        customerId,
      ]);
      if (!row) return undefined;
      // Retention leaves a marker where the body was (store/pg/admin.ts, retention).
      return { request: row.request.toString() === '{"purged":true}' ? null : row.request, format: row.request_format, composed: row.raw };
    },
  };
}
