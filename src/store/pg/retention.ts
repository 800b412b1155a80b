import { utcDay } from '../../domain/tls-report.js';
import type { PgDb } from './db.js';

const DAY = 86_400_000;

/**
 * Retention, in batches of 1,000 rows per transaction: a long write transaction would hold back
 * the webhook fan-out, which reads only events of transactions older than every one running.
 */
export async function purgeOld(db: PgDb, now: number, days: number): Promise<{ messages: number; attempts: number }> {
  // The inbound rate's per-minute counts (up to one row per shard a minute): only the current minute is read.
  await db.run("DELETE FROM inbound_usage WHERE period LIKE 'm:%' AND substr(period, 3)::bigint < $1", [
    Math.floor(now / 60_000) - 60,
  ]);
  // The send quotas' past windows (domain/quotas.ts): only the current ones are read; months are kept.
  await db.run(
    "DELETE FROM send_usage WHERE (left(period, 1) = 'm' AND substr(period, 2)::bigint < $1) OR (left(period, 1) = 'd' AND substr(period, 2)::bigint < $2)",
    [Math.floor(now / 60_000) - 60, Math.floor(now / DAY) - 2],
  );
  // The warm-up's use (store/warmup-store.ts): today's is read, yesterday's kept for a give-back after midnight.
  await db.run('DELETE FROM warmup_use WHERE day < $1', [utcDay(now - DAY)]);
  if (days <= 0) return { messages: 0, attempts: 0 };
  const cutoff = now - days * DAY;
  // TLS reports' counters and sent reports, by day; never the last two, which the report job reads.
  const tlsDay = utcDay(Math.min(cutoff, now - 2 * DAY));
  await db.run('DELETE FROM tls_report_counts WHERE day < $1', [tlsDay]);
  await db.run('DELETE FROM tls_reports_sent WHERE day < $1', [tlsDay]);
  let messages = 0;
  let attempts = 0;
  for (;;) {
    const n = await db.run(
      `UPDATE messages SET raw = NULL, request = convert_to('{"purged":true}', 'UTF8') WHERE id IN (
         SELECT m.id FROM messages m WHERE m.created_at < $1 AND m.request <> convert_to('{"purged":true}', 'UTF8')
           AND NOT EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state IN ('queued', 'deferred')) LIMIT 1000)`,
      [cutoff],
    );
    messages += n;
    if (n < 1000) break;
  }
  for (;;) {
    const n = await db.run(
      'DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE at < $1 LIMIT 1000)',
      [cutoff],
    );
    attempts += n;
    if (n < 1000) break;
  }
  return { messages, attempts };
}
