import { compareCounts, countKey, type TlsCount } from '../../domain/tls-report.js';
import {
  type TlsCountRow,
  type TlsReportClaim,
  type TlsReportRecord,
  type TlsReportStore,
  tlsCountOf,
} from '../tls-report-store.js';
import type { PgDb } from './db.js';

// SMTP TLS reporting's counters and sent reports (store/tls-report-store.ts), as SQLite's
// (store/sqlite/tls-reports.ts). Counters from several nodes add up under the row's lock.

async function add(db: PgDb, counts: TlsCount[]): Promise<void> {
  if (counts.length === 0) return;
  // In key order, so two nodes adding the same counters lock their rows in one order (no deadlock).
  const rows = counts
    .map((c) => ({ c, key: countKey(c.day, c) }))
    .sort((a, b) => {
      const ka = `${a.c.day}/${a.key}`;
      const kb = `${b.c.day}/${b.key}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
  await db.tx(async (q) => {
    for (const { c, key } of rows)
      await q.run(
        `INSERT INTO tls_report_counts (day, key, policy_domain, policy, failure, sessions) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (day, key) DO UPDATE SET sessions = tls_report_counts.sessions + excluded.sessions`,
        [
          c.day,
          key,
          c.policy.domain,
          JSON.stringify(c.policy),
          c.failure ? JSON.stringify(c.failure) : null,
          c.sessions,
        ],
      );
  });
}

async function claim(db: PgDb, c: TlsReportClaim): Promise<boolean> {
  const row = await db.row(
    `INSERT INTO tls_reports_sent AS s (day, domain, report_id, holder, claimed_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (day, domain) DO UPDATE SET holder = excluded.holder, claimed_at = excluded.claimed_at
       WHERE s.sent_at IS NULL AND (s.holder = excluded.holder OR s.claimed_at <= excluded.claimed_at - $6)
     RETURNING 1`,
    [c.day, c.domain, c.reportId, c.holder, c.now, c.staleMs],
  );
  return row !== undefined;
}

export function pgTlsReports(db: PgDb): TlsReportStore {
  return {
    add: (counts) => add(db, counts),
    counts: async (day, domain) =>
      (
        await db.rows<TlsCountRow>(
          `SELECT day, policy, failure, sessions FROM tls_report_counts
           WHERE day = $1 AND ($2::text IS NULL OR policy_domain = $2)`,
          [day, domain ?? null],
        )
      )
        .map(tlsCountOf)
        .sort(compareCounts),
    domains: async (day) =>
      (
        await db.rows<{ policy_domain: string }>(
          'SELECT DISTINCT policy_domain FROM tls_report_counts WHERE day = $1',
          [day],
        )
      )
        .map((r) => r.policy_domain)
        .sort(),
    claim: (c) => claim(db, c),
    sent: async (day, domain, holder, now, results) =>
      void (await db.run(
        'UPDATE tls_reports_sent SET sent_at = $1, results = $2 WHERE day = $3 AND domain = $4 AND holder = $5 AND sent_at IS NULL',
        [now, results, day, domain, holder],
      )),
    release: async (day, domain, holder) =>
      void (await db.run(
        'DELETE FROM tls_reports_sent WHERE day = $1 AND domain = $2 AND holder = $3 AND sent_at IS NULL',
        [day, domain, holder],
      )),
    sentOn: (day) =>
      db.rows<TlsReportRecord>(
        'SELECT day, domain, report_id, holder, claimed_at, sent_at, results FROM tls_reports_sent WHERE day = $1 ORDER BY domain',
        [day],
      ),
  };
}
