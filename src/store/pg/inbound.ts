import type { Report, ReportEnvelope } from '../../domain/report.js';
import { asyncBounceTransition, complaintTransition, reportAction } from '../../domain/transitions.js';
import { publicId } from '../../lib/ids.js';
import {
  type InboundRow,
  inboundLimitCheck,
  type LimitCheck,
  type ReceiveInput,
  type ReceivingDomain,
  receivedEventData,
  reportKind,
  reportRecipientIds,
  type StoredInbound,
  usagePeriods,
} from '../model.js';
import type { InboundStore } from '../store.js';
import { INBOUND_COLUMNS, inboundValues } from '../views.js';
import type { PgDb, Q } from './db.js';
import { complained, loadMessages } from './delivery.js';
import { applyTransitions, insertEvents } from './transitions.js';

/** Received mail and reports on PostgreSQL: one transaction per message received, as the SQLite writer's. */

async function storeInbound(q: Q, m: Omit<StoredInbound, 'raw'>, raw: Buffer, now: number): Promise<string> {
  const id = publicId('in', 22);
  await q.run(
    `INSERT INTO inbound_messages (${INBOUND_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    inboundValues(id, m, raw, now),
  );
  // A shard per connection (store/pg/schema.ts): one row per domain and month would make every node's receipts for the domain commit one after another.
  const periods = usagePeriods(now);
  await q.run(
    `INSERT INTO inbound_usage (domain_id, period, shard, count) SELECT $1, p, posthaste_shard(), 1 FROM unnest($2::text[]) AS p
     ON CONFLICT (domain_id, period, shard) DO UPDATE SET count = inbound_usage.count + 1`,
    [m.domainId, [periods.minute, periods.month]],
  );
  await insertEvents(
    q,
    [
      {
        customerId: m.customerId,
        type: 'email.received',
        data: receivedEventData(id, m, raw.length),
        messageRowId: null,
        recipientId: null,
      },
    ],
    now,
  );
  return id;
}

/** The recipient a report is about: the first its tokens name (model/inbound.ts, reportRecipientIds). */
async function recipientOf(q: Q, secret: Buffer, report: Report, env: ReportEnvelope) {
  for (const id of reportRecipientIds(secret, report, env)) {
    const r = await q.row<{ id: number; message_id: number; address: string; state: string }>(
      'SELECT id, message_id, address, state FROM recipients WHERE id = $1',
      [id],
    );
    if (r) return r;
  }
  return undefined;
}

async function applyReport(
  q: Q,
  secret: Buffer,
  report: Report,
  raw: Buffer,
  env: ReportEnvelope,
  now: number,
): Promise<void> {
  const rcpt = report.kind === 'none' ? undefined : await recipientOf(q, secret, report, env);
  const kind = reportKind(report, env);
  await q.run(
    'INSERT INTO inbound_reports (kind, recipient_id, mail_from, rcpt_to, summary, raw, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [kind, rcpt?.id ?? null, env.mailFrom, env.rcptTo, JSON.stringify(report), raw, now],
  );
  if (!rcpt) return;
  const m = (await loadMessages(q, [rcpt.message_id])).get(rcpt.message_id);
  if (!m) return;
  const action = reportAction(report, rcpt);
  if (action.kind === 'complaint') {
    if ((await complained(q, [rcpt.id])).size > 0) return;
    await applyTransitions(q, [{ m, r: rcpt, t: complaintTransition(m, rcpt, action.facts, now) }], now);
  } else if (action.kind === 'bounce') {
    await applyTransitions(
      q,
      [{ m, r: rcpt, t: asyncBounceTransition(m, rcpt, action.reply, action.suppress, now) }],
      now,
    );
  }
}

async function receive(db: PgDb, input: ReceiveInput): Promise<string[]> {
  const raw = Buffer.from(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength);
  const secret = Buffer.from(input.secret);
  return db.tx(async (q) => {
    const ids: string[] = [];
    for (const m of input.stores) ids.push(await storeInbound(q, m, raw, input.now));
    if (input.report) for (const env of input.reports) await applyReport(q, secret, input.report, raw, env, input.now);
    return ids;
  });
}

export function pgInbound(db: PgDb): InboundStore {
  return {
    receive: (input) => receive(db, input),
    checkLimits: (d, defaults, now) => checkLimits(db, d, defaults, now),
    recordLimited: (d, limit, windowEndsAt, now) => recordLimited(db, d, limit, windowEndsAt, now),
    get: async (id, customerId) => {
      const r = await db.row<InboundRow>('SELECT * FROM inbound_messages WHERE id = $1', [id]);
      return r && (customerId === undefined || r.customer_id === customerId) ? r : undefined;
    },
    size: async (id, customerId) =>
      (
        await db.row<{ size: number }>('SELECT size FROM inbound_messages WHERE id = $1 AND customer_id = $2', [
          id,
          customerId,
        ])
      )?.size,
    list: (opts) =>
      db.rows<Omit<InboundRow, 'raw'>>(
        `SELECT id, customer_id, mail_from, rcpt_to, remote_ip, helo, size, from_header, subject, message_id, attachments, auth, created_at FROM inbound_messages
         WHERE created_at < $1 AND ($2::bigint IS NULL OR customer_id = $2) ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $3`,
        [opts.before ?? Number.MAX_SAFE_INTEGER, opts.customerId ?? null, opts.limit],
      ),
  };
}

/** Whether one more message fits the domain's per-minute and monthly limits (0: unlimited), summed over the shards. */
async function checkLimits(
  db: PgDb,
  d: ReceivingDomain,
  defaults: { ratePerMinute: number; monthlyLimit: number },
  now: number,
): Promise<LimitCheck> {
  const periods = usagePeriods(now);
  const used = new Map(
    (
      await db.rows<{ period: string; count: number }>(
        'SELECT period, sum(count)::int AS count FROM inbound_usage WHERE domain_id = $1 AND period = ANY($2::text[]) GROUP BY period',
        [d.id, [periods.minute, periods.month]],
      )
    ).map((r) => [r.period, r.count]),
  );
  return inboundLimitCheck(
    d,
    defaults,
    { minute: used.get(periods.minute) ?? 0, month: used.get(periods.month) ?? 0 },
    now,
  );
}

/** Once per domain and hour for every node: the upsert returns a row only for the one that moved last_at. */
function recordLimited(
  db: PgDb,
  d: ReceivingDomain,
  limit: 'rate' | 'monthly',
  windowEndsAt: number,
  now: number,
): Promise<boolean> {
  return db.tx(async (q) => {
    const fired = await q.row(
      `INSERT INTO inbound_limited (domain_id, last_at) VALUES ($1, $2)
           ON CONFLICT (domain_id) DO UPDATE SET last_at = excluded.last_at WHERE inbound_limited.last_at <= excluded.last_at - 3600000 RETURNING 1`,
      [d.id, now],
    );
    if (!fired) return false;
    await insertEvents(
      q,
      [
        {
          customerId: d.customerId,
          type: 'inbound.limited',
          data: { domain: d.name, limit, window_ends_at: new Date(windowEndsAt).toISOString() },
          messageRowId: null,
          recipientId: null,
        },
      ],
      now,
    );
    return true;
  });
}
