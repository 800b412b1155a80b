import { quotaWindows } from '../../domain/quotas.js';
import type { CustomerQuotas, QuotaUse } from '../model.js';
import type { CustomerStore } from '../store.js';
import type { PgDb } from './db.js';

/**
 * A customer's send quotas on PostgreSQL: its own limits, and its use summed over the shards of
 * send_usage. The accept judges and counts them in its own statement (posthaste_send_quota,
 * store/pg/migrations/017_send_quotas.ts).
 */
export function pgQuotas(db: PgDb): Pick<CustomerStore, 'quotas' | 'setQuotas' | 'quotaUse'> {
  const quotas = async (id: number): Promise<CustomerQuotas | undefined> => {
    const r = await db.row<{ m: string | null; d: string | null; mo: string | null }>(
      'SELECT send_per_minute AS m, send_per_day AS d, send_per_month AS mo FROM customers WHERE id = $1',
      [id],
    );
    const n = (v: string | null) => (v === null ? null : Number(v));
    return r && { perMinute: n(r.m), perDay: n(r.d), perMonth: n(r.mo) };
  };
  return {
    quotas,
    setQuotas: async (id, q) => {
      const cur = await quotas(id);
      if (!cur) return false;
      const next = { ...cur, ...q };
      await db.run('UPDATE customers SET send_per_minute = $2, send_per_day = $3, send_per_month = $4 WHERE id = $1', [
        id,
        next.perMinute,
        next.perDay,
        next.perMonth,
      ]);
      return true;
    },
    quotaUse: async (id, now): Promise<QuotaUse> => {
      const keys = quotaWindows(now).map((w) => w.key);
      const rows = await db.rows<{ sandbox: number; period: string; count: number }>(
        `SELECT sandbox, period, sum(count)::int AS count FROM send_usage
         WHERE customer_id = $1 AND period = ANY($2::text[]) GROUP BY sandbox, period`,
        [id, keys],
      );
      const of = (sb: number) => keys.map((k) => rows.find((r) => r.sandbox === sb && r.period === k)?.count ?? 0);
      return { live: of(0), sandbox: of(1) };
    },
  };
}
