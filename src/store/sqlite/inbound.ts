import { isoTime } from '../../lib/clock.js';
import { publicId } from '../../lib/ids.js';
import {
  type InboundRow,
  inboundLimitCheck,
  type LimitCheck,
  type ReceivingDomain,
  receivedEventData,
  type StoredInbound,
  usagePeriods,
} from '../model.js';
import type { InboundStore } from '../store.js';
import { INBOUND_COLUMNS, inboundValues } from '../views.js';
import { BOUND_LIMIT, type Db } from './db.js';
import { recordEvent } from './events.js';

function usage(db: Db, domainId: number, period: string): number {
  return (
    db.get<{ count: number }>('SELECT count FROM inbound_usage WHERE domain_id = ? AND period = ?', domainId, period)
      ?.count ?? 0
  );
}

/** Whether one more message fits the domain's per-minute and monthly limits (0: unlimited). */
export function checkInboundLimits(
  db: Db,
  d: ReceivingDomain,
  defaults: { ratePerMinute: number; monthlyLimit: number },
  now: number,
): LimitCheck {
  const periods = usagePeriods(now);
  return inboundLimitCheck(
    d,
    defaults,
    { minute: usage(db, d.id, periods.minute), month: usage(db, d.id, periods.month) },
    now,
  );
}

/** `inbound.limited`, at most once per domain per hour (docs/inbound.md). */
export function recordLimited(
  db: Db,
  d: ReceivingDomain,
  limit: 'rate' | 'monthly',
  windowEndsAt: number,
  now: number,
): boolean {
  return db.tx(() => {
    const last = db.get<{ last_at: number }>('SELECT last_at FROM inbound_limited WHERE domain_id = ?', d.id)?.last_at;
    if (last !== undefined && now - last < 3_600_000) return false;
    db.run(
      'INSERT INTO inbound_limited (domain_id, last_at) VALUES (?, ?) ON CONFLICT(domain_id) DO UPDATE SET last_at = excluded.last_at',
      d.id,
      now,
    );
    recordEvent(db, {
      customerId: d.customerId,
      type: 'inbound.limited',
      data: { domain: d.name, limit, window_ends_at: isoTime(windowEndsAt) },
      now,
    });
    return true;
  });
}

/** Stores a received message, counts it against the domain's limits and fires `email.received`, in the caller's transaction. */
export function storeInbound(db: Db, m: StoredInbound, now: number): string {
  const id = publicId('in', 22);
  db.run(
    `INSERT INTO inbound_messages (${INBOUND_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ...inboundValues(id, m, m.raw, now),
  );
  const periods = usagePeriods(now);
  for (const period of [periods.minute, periods.month])
    db.run(
      'INSERT INTO inbound_usage (domain_id, period, count) VALUES (?, ?, 1) ON CONFLICT(domain_id, period) DO UPDATE SET count = count + 1',
      m.domainId,
      period,
    );
  recordEvent(db, {
    customerId: m.customerId,
    type: 'email.received',
    data: receivedEventData(id, m, m.raw.length),
    now,
  });
  return id;
}

export function storeReport(
  db: Db,
  r: {
    kind: 'dsn' | 'arf';
    recipientId: number | null;
    mailFrom: string;
    rcptTo: string;
    summary: unknown;
    raw: Buffer;
  },
  now: number,
): void {
  db.run(
    'INSERT INTO inbound_reports (kind, recipient_id, mail_from, rcpt_to, summary, raw, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    r.kind,
    r.recipientId,
    r.mailFrom,
    r.rcptTo,
    JSON.stringify(r.summary),
    r.raw,
    now,
  );
}

/** A received message's size, without reading it (to make room for it before it is loaded). */
export function inboundSize(db: Db, id: string, customerId: number): number | undefined {
  return db.get<{ size: number }>('SELECT size FROM inbound_messages WHERE id = ? AND customer_id = ?', id, customerId)
    ?.size;
}

export function getInbound(db: Db, id: string, customerId?: number): InboundRow | undefined {
  const r = db.get<InboundRow>('SELECT * FROM inbound_messages WHERE id = ?', id);
  return r && (customerId === undefined || r.customer_id === customerId) ? r : undefined;
}

export function listInbound(
  db: Db,
  opts: { customerId?: number; limit: number; before?: number },
): Array<Omit<InboundRow, 'raw'>> {
  const where = ['created_at < ?'];
  const args: unknown[] = [opts.before ?? Number.MAX_SAFE_INTEGER];
  if (opts.customerId !== undefined) {
    where.push('customer_id = ?');
    args.push(opts.customerId);
  }
  return db.all<Omit<InboundRow, 'raw'>>(
    `SELECT id, customer_id, mail_from, rcpt_to, remote_ip, helo, size, from_header, subject, message_id, attachments, auth, created_at FROM inbound_messages WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC ${BOUND_LIMIT}`,
    ...args,
    opts.limit,
  );
}

/** The recipient a return-path token names, with its message. */
export function recipientById(
  db: Db,
  id: number,
): { id: number; messageRowId: number; address: string; state: string } | undefined {
  const r = db.get<{ id: number; message_id: number; address: string; state: string }>(
    'SELECT id, message_id, address, state FROM recipients WHERE id = ?',
    id,
  );
  return r && { id: r.id, messageRowId: r.message_id, address: r.address, state: r.state };
}

/** Received mail on SQLite: receiving is the write given (store/sqlite/index.ts), the reads run on the process's connection. */
export function sqliteInbound(db: Db, writes: Pick<InboundStore, 'receive'>): InboundStore {
  return {
    receive: writes.receive,
    checkLimits: async (d, defaults, now) => checkInboundLimits(db, d, defaults, now),
    recordLimited: async (d, limit, windowEndsAt, now) => recordLimited(db, d, limit, windowEndsAt, now),
    get: async (id, customerId) => getInbound(db, id, customerId),
    size: async (id, customerId) => inboundSize(db, id, customerId),
    list: async (opts) => listInbound(db, opts),
  };
}
