import { addressKey } from '../../domain/addresses.js';
import { type QuotaLimits, quotaExceeded, quotaWindows } from '../../domain/quotas.js';
import { isStoreUnavailable } from '../errors.js';
import {
  type AcceptInput,
  type AcceptResult,
  type SendCommit,
  type SendInput,
  type SuppressionReason,
  suppressedRefusal,
} from '../model.js';
import { type AcceptedColumns, acceptedColumns } from '../views.js';
import type { PgDb, Q } from './db.js';

/**
 * The send path's statement on PostgreSQL: ACCEPT_MANY stores any number of sends at once, and
 * AcceptGroups gathers the sends without an Idempotency-Key that arrive together into one
 * statement and one commit, as the SQLite writer's group commit does (store/sqlite/writer/).
 */

/**
 * Stores any number of messages in one statement: each one's key (not revoked), sending domain
 * (the customer's, verified), customer (not paused, unless the send is a sandbox one) and recipients (none suppressed) checked, and those that pass
 * inserted with their recipients and tags (a recipient is suppressed by its own entry or its domain's, `@example.com`) (a submitted MIME message with its size, known now). Answers one row per message, in order: why it was
 * refused, or its row id; with the auth epoch the statement saw.
 */
export const ACCEPT_MANY = `
WITH i AS (
  SELECT u.*, substring($21::bytea FROM (sum(u.size) OVER (ORDER BY u.n) - u.size + 1)::int FOR u.size) AS request
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::bigint[], $11::bigint[], $12::text[], $13::bigint[], $22::text[], $23::text[],
              $24::text[], $25::int[], $26::bigint[], $27::bigint[], $28::bigint[], $29::text[], $30::text[], $31::text[])
    WITH ORDINALITY AS u(customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, size, created_at, scheduled_at, tags, next_at, format, header_message_id,
                         pool, unsubscribe, qm, qd, qmo, wm, wd, wmo, n)),
rin AS (SELECT r.*, substring(r.key FROM '@[^@]*$') AS dkey FROM unnest($14::int[], $15::text[], $16::text[], $17::text[], $18::text[]) WITH ORDINALITY AS r(n, address, domain, field, key, o)),
checked AS (
  SELECT i.n,
         CASE WHEN i.api_key_id IS NOT NULL AND (k.id IS NULL OR k.revoked_at IS NOT NULL) THEN 'key_revoked'
              WHEN d.id IS NULL OR d.customer_id <> i.customer_id THEN 'domain_unknown'
              WHEN d.verified_at IS NULL THEN 'domain_unverified'
              WHEN p.customer_id IS NOT NULL THEN 'customer_paused' END AS refused, p.reason AS paused_reason,
         (SELECT json_object_agg(rin.key, s.reason) FROM rin JOIN suppressions s ON s.customer_id = i.customer_id AND s.address IN (rin.key, rin.dkey) WHERE rin.n = i.n) AS suppressed
  FROM i LEFT JOIN api_keys k ON k.id = i.api_key_id LEFT JOIN domains d ON d.name = i.sender_domain
    LEFT JOIN customer_reputation p ON p.customer_id = i.customer_id AND p.paused_at IS NOT NULL AND i.sandbox = 0),
passed AS (SELECT i.*, (SELECT count(*) FROM rin WHERE rin.n = i.n)::int AS cnt FROM i JOIN checked c USING (n) WHERE c.refused IS NULL AND c.suppressed IS NULL),
quota AS (
  SELECT q.* FROM (SELECT array_agg(n::int ORDER BY n) AS ns, array_agg(customer_id ORDER BY n) AS cs, array_agg(sandbox ORDER BY n) AS sbs, array_agg(cnt ORDER BY n) AS cnts,
                          array_agg(qm ORDER BY n) AS qm, array_agg(qd ORDER BY n) AS qd, array_agg(qmo ORDER BY n) AS qmo,
                          array_agg(wm ORDER BY n) AS wm, array_agg(wd ORDER BY n) AS wd, array_agg(wmo ORDER BY n) AS wmo FROM passed) a,
                LATERAL posthaste_send_quota(a.ns, a.cs, a.sbs, a.cnts, a.qm, a.qd, a.qmo, a.wm, a.wd, a.wmo) q),
ok AS (SELECT * FROM passed p WHERE NOT EXISTS (SELECT 1 FROM quota WHERE quota.n = p.n)),
m AS (
  INSERT INTO messages (customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, request, request_format, raw, size, created_at, scheduled_at, tags, header_message_id, pool, unsubscribe)
  SELECT customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, request, format, NULL,
         CASE WHEN format = 'mime' THEN size END, created_at, scheduled_at, tags, header_message_id, pool, unsubscribe FROM ok ORDER BY n
  RETURNING id, message_id),
mi AS (SELECT m.id, ok.n, ok.customer_id, ok.created_at, ok.next_at FROM m JOIN ok USING (message_id)),
r AS (
  INSERT INTO recipients (message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, created_at, updated_at)
  SELECT mi.id, mi.customer_id, rin.address, rin.domain, rin.field, 'queued', 0, mi.next_at, mi.created_at, mi.created_at FROM mi JOIN rin USING (n) ORDER BY rin.o),
t AS (INSERT INTO message_tags (customer_id, tag, message_id) SELECT mi.customer_id, tg.tag, mi.id FROM mi JOIN unnest($19::int[], $20::text[]) AS tg(n, tag) USING (n))
SELECT c.n, c.refused, c.paused_reason, c.suppressed, mi.id, quota.lim, quota.used, (SELECT value FROM settings WHERE name = 'auth_epoch') AS epoch
FROM checked c LEFT JOIN mi USING (n) LEFT JOIN quota USING (n) ORDER BY c.n`;

export type Checked =
  | { kind: 'key_revoked' | 'domain_unknown' | 'domain_unverified' }
  | { kind: 'customer_paused'; reason: string | null }
  | AcceptResult;

/** A row of ACCEPT_MANY's answer. */
type AcceptRow = {
  refused: 'key_revoked' | 'domain_unknown' | 'domain_unverified' | 'customer_paused' | null;
  paused_reason: string | null;
  suppressed: Record<string, SuppressionReason> | null;
  id: number | null;
  /** Over a send quota: the limits in effect and each window's use (bigint arrays, as text). */
  lim: string[] | null;
  used: string[] | null;
  epoch: string | null;
};

type Send = Omit<AcceptInput, 'idempotency'>;

/** Stores `inputs` with ACCEPT_MANY: each one's answer, and the auth epoch. */
export async function acceptMany(q: Q, inputs: Send[]): Promise<{ results: Checked[]; epoch: string }> {
  const requests = inputs.map((x) =>
    typeof x.request === 'string'
      ? Buffer.from(x.request, 'utf8')
      : Buffer.from(x.request.buffer, x.request.byteOffset, x.request.byteLength),
  );
  const encoded = inputs.map(acceptedColumns);
  const rows = await q.rows<AcceptRow>(ACCEPT_MANY, [
    ...messageColumns(inputs, requests, encoded),
    ...recipientColumns(inputs),
    ...tagColumns(inputs),
    Buffer.concat(requests),
    encoded.map((c) => c.requestFormat),
    encoded.map((c) => c.headerMessageId),
    encoded.map((c) => c.pool),
    encoded.map((c) => c.unsubscribe),
    ...quotaColumns(inputs),
  ]);
  return { results: rows.map((row, i) => checkedResult(row, inputs[i]!)), epoch: rows[0]?.epoch ?? '' };
}

/** Parameters $1 to $13: the messages, one array per column, the sends in order. */
function messageColumns(inputs: Send[], requests: Buffer[], encoded: AcceptedColumns[]): unknown[][] {
  const cols = Array.from({ length: 13 }, () => new Array<unknown>(inputs.length));
  inputs.forEach((x, i) => {
    const c = encoded[i]!;
    const values = [
      x.customerId,
      x.messageId,
      x.apiKeyId,
      c.sandbox,
      x.fromHeader,
      x.senderDomain,
      x.subject,
      c.metadata,
      requests[i]!.length,
      x.now,
      c.scheduledAt,
      c.tags,
      c.firstAttemptAt,
    ];
    for (const [c, v] of values.entries()) cols[c]![i] = v;
  });
  return cols;
}

/** Parameters $14 to $18: every send's recipients, each with its send's number (from 1) and its suppression key. */
function recipientColumns(inputs: Send[]): unknown[][] {
  const rin: unknown[][] = [[], [], [], [], []];
  inputs.forEach((x, i) => {
    for (const r of x.recipients) {
      rin[0]!.push(i + 1);
      rin[1]!.push(r.address);
      rin[2]!.push(r.domain);
      rin[3]!.push(r.field);
      rin[4]!.push(addressKey(r.address));
    }
  });
  return rin;
}

/** Parameters $19 and $20: every send's tags, each with its send's number (from 1). */
function tagColumns(inputs: Send[]): unknown[][] {
  const tags: unknown[][] = [[], []];
  inputs.forEach((x, i) => {
    for (const tag of x.tags ?? []) {
      tags[0]!.push(i + 1);
      tags[1]!.push(tag);
    }
  });
  return tags;
}

/** Parameters $26 to $31: each send's default quotas (domain/quotas.ts) and its windows' keys. */
function quotaColumns(inputs: Send[]): unknown[][] {
  const cols: unknown[][] = Array.from({ length: 6 }, () => new Array<unknown>(inputs.length));
  inputs.forEach((x, i) => {
    const q = x.quotas ?? [0, 0, 0];
    const w = quotaWindows(x.now);
    const values = [q[0], q[1], q[2], w[0]!.key, w[1]!.key, w[2]!.key];
    for (const [c, v] of values.entries()) cols[c]![i] = v;
  });
  return cols;
}

/** One send's answer from its row: refused, suppressed (the recipients on the list, with why), or accepted. */
function checkedResult(row: AcceptRow, input: Send): Checked {
  if (row.refused === 'customer_paused') return { kind: row.refused, reason: row.paused_reason };
  if (row.refused) return { kind: row.refused };
  if (row.suppressed) {
    const reasons = row.suppressed;
    return suppressedRefusal(input.recipients, (key) => reasons[key]);
  }
  if (row.lim && row.used) {
    const limits = row.lim.map(Number) as QuotaLimits;
    const over = quotaExceeded(limits, row.used.map(Number), input.recipients.length, input.now);
    if (over) return { kind: 'rate_limited', quota: over };
  }
  return { kind: 'accepted', emailId: row.id! };
}

function requestBytes(r: Uint8Array | string): number {
  return typeof r === 'string' ? r.length : r.byteLength;
}

/**
 * The sends without an Idempotency-Key, grouped: those that arrive while earlier groups are being
 * written go together in the next statement, one commit for all of them (as the SQLite writer's
 * group commit does). A group that fails for any reason but the database's absence is written
 * again one send at a time, so one send's error is its own.
 */
export class AcceptGroups {
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
      for (
        ;
        take < this.waiting.length && take < AcceptGroups.MAX && (take === 0 || bytes < AcceptGroups.MAX_BYTES);
        take++
      )
        bytes += requestBytes(this.waiting[take]!.input.request);
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
