import { utcDay } from '../../domain/tls-report.js';
import type { Db } from './db.js';

const DAY = 86_400_000;

/**
 * Retention: the bodies (request and composed MIME) of messages whose every recipient reached a
 * final state, and webhook attempt logs, older than `days`. The message rows, their recipients and
 * events stay (GET /api/v1/emails/:id keeps working, without the body).
 */
export function purgeOld(db: Db, now: number, days: number): { messages: number; attempts: number } {
  // The send quotas' past windows (domain/quotas.ts): only the current ones are read; months are kept.
  db.run(
    "DELETE FROM send_usage WHERE (substr(period, 1, 1) = 'm' AND CAST(substr(period, 2) AS INTEGER) < ?) OR (substr(period, 1, 1) = 'd' AND CAST(substr(period, 2) AS INTEGER) < ?)",
    Math.floor(now / 60_000) - 60,
    Math.floor(now / DAY) - 2,
  );
  // The warm-up's use (store/warmup-store.ts): today's is read, yesterday's kept for a give-back after midnight.
  db.run('DELETE FROM warmup_use WHERE day < ?', utcDay(now - DAY));
  if (days <= 0) return { messages: 0, attempts: 0 };
  const cutoff = now - days * DAY;
  return db.tx(() => {
    // TLS reports' counters and sent reports, by day; never the last two, which the report job reads.
    const tlsDay = utcDay(Math.min(cutoff, now - 2 * DAY));
    db.run('DELETE FROM tls_report_counts WHERE day < ?', tlsDay);
    db.run('DELETE FROM tls_reports_sent WHERE day < ?', tlsDay);
    const messages = db.run(
      `UPDATE messages SET raw = NULL, request = '{"purged":true}'
       WHERE created_at < ? AND request != '{"purged":true}'
         AND NOT EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = messages.id AND r.state IN ('queued', 'deferred'))`,
      cutoff,
    ).changes;
    const attempts = db.run('DELETE FROM webhook_attempts WHERE at < ?', cutoff).changes;
    return { messages, attempts };
  });
}
