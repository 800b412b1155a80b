import {
  effectiveLimits,
  fits,
  hasQuota,
  type QuotaExceeded,
  type QuotaLimits,
  quotaExceeded,
  quotaWindows,
} from '../../domain/quotas.js';
import type { AcceptInput, CustomerQuotas, QuotaUse } from '../model.js';
import type { Db } from './db.js';

/**
 * Send quotas on SQLite (domain/quotas.ts): judged and counted inside the accepting transaction,
 * which the one writer runs one at a time, so the count is exact. Every accepted send is counted,
 * quota or not, so `customers show` has the use against a quota set later.
 */

const SQL = {
  own: 'SELECT send_per_minute, send_per_day, send_per_month FROM customers WHERE id = ?',
  used: 'SELECT period, count FROM send_usage WHERE customer_id = ? AND sandbox = ? AND period IN (?, ?, ?)',
  count: `INSERT INTO send_usage (customer_id, sandbox, period, count) VALUES (?, ?, ?, ?), (?, ?, ?, ?), (?, ?, ?, ?)
          ON CONFLICT (customer_id, sandbox, period) DO UPDATE SET count = count + excluded.count`,
};

type OwnRow = { send_per_minute: number | null; send_per_day: number | null; send_per_month: number | null };

const ownOf = (r: OwnRow | undefined) =>
  r ? ([r.send_per_minute, r.send_per_day, r.send_per_month] as const) : undefined;

function usedIn(db: Db, customerId: number, sandbox: boolean, keys: string[]): number[] {
  const rows = db.all<{ period: string; count: number }>(SQL.used, customerId, sandbox ? 1 : 0, ...keys);
  return keys.map((k) => rows.find((r) => r.period === k)?.count ?? 0);
}

/** Refuses the send if it does not fit its customer's quotas; counts it otherwise. In the caller's transaction. */
export function takeQuota(db: Db, input: AcceptInput): QuotaExceeded | undefined {
  const count = input.recipients.length;
  const windows = quotaWindows(input.now);
  const keys = windows.map((w) => w.key);
  const defaults: QuotaLimits = input.quotas ?? [0, 0, 0];
  const limits = input.sandbox ? defaults : effectiveLimits(defaults, ownOf(db.get<OwnRow>(SQL.own, input.customerId)));
  if (hasQuota(limits)) {
    const used = usedIn(db, input.customerId, input.sandbox, keys);
    if (!fits(limits, used, count)) return quotaExceeded(limits, used, count, input.now);
  }
  const sb = input.sandbox ? 1 : 0;
  db.run(SQL.count, ...keys.flatMap((k) => [input.customerId, sb, k, count]));
  return undefined;
}

export function customerQuotas(db: Db, customerId: number): CustomerQuotas | undefined {
  const own = ownOf(db.get<OwnRow>(SQL.own, customerId));
  return own && { perMinute: own[0], perDay: own[1], perMonth: own[2] };
}

export function setCustomerQuotas(db: Db, customerId: number, q: Partial<CustomerQuotas>): boolean {
  const cur = customerQuotas(db, customerId);
  if (!cur) return false;
  const next = { ...cur, ...q };
  db.run(
    'UPDATE customers SET send_per_minute = ?, send_per_day = ?, send_per_month = ? WHERE id = ?',
    next.perMinute,
    next.perDay,
    next.perMonth,
    customerId,
  );
  return true;
}

/** What the customer's production and sandbox keys used in each current window. */
export function quotaUse(db: Db, customerId: number, now: number): QuotaUse {
  const keys = quotaWindows(now).map((w) => w.key);
  return { live: usedIn(db, customerId, false, keys), sandbox: usedIn(db, customerId, true, keys) };
}
