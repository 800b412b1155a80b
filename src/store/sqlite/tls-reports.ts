import { compareCounts, countKey, type TlsCount } from '../../domain/tls-report.js';
import {
  type TlsCountRow,
  type TlsReportClaim,
  type TlsReportRecord,
  type TlsReportStore,
  tlsCountOf,
} from '../tls-report-store.js';
import type { Db } from './db.js';

// SMTP TLS reporting's counters and sent reports (store/tls-report-store.ts), as PostgreSQL's
// (store/pg/tls-reports.ts).

function add(db: Db, counts: TlsCount[]): void {
  db.tx(() => {
    for (const c of counts)
      db.run(
        `INSERT INTO tls_report_counts (day, key, policy_domain, policy, failure, sessions) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (day, key) DO UPDATE SET sessions = sessions + excluded.sessions`,
        c.day,
        countKey(c.day, c),
        c.policy.domain,
        JSON.stringify(c.policy),
        c.failure ? JSON.stringify(c.failure) : null,
        c.sessions,
      );
  });
}

function claim(db: Db, c: TlsReportClaim): boolean {
  return db.tx(() => {
    const row = db.get<{ holder: string; claimed_at: number; sent_at: number | null }>(
      'SELECT holder, claimed_at, sent_at FROM tls_reports_sent WHERE day = ? AND domain = ?',
      c.day,
      c.domain,
    );
    if (row && (row.sent_at !== null || (row.holder !== c.holder && row.claimed_at > c.now - c.staleMs))) return false;
    db.run(
      `INSERT INTO tls_reports_sent (day, domain, report_id, holder, claimed_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (day, domain) DO UPDATE SET holder = excluded.holder, claimed_at = excluded.claimed_at`,
      c.day,
      c.domain,
      c.reportId,
      c.holder,
      c.now,
    );
    return true;
  });
}

export function sqliteTlsReports(db: Db): TlsReportStore {
  return {
    add: async (counts) => add(db, counts),
    counts: async (day, domain) =>
      db
        .all<TlsCountRow>(
          `SELECT day, policy, failure, sessions FROM tls_report_counts
           WHERE day = ? AND (? IS NULL OR policy_domain = ?)`,
          day,
          domain ?? null,
          domain ?? null,
        )
        .map(tlsCountOf)
        .sort(compareCounts),
    domains: async (day) =>
      db
        .all<{ policy_domain: string }>(
          'SELECT DISTINCT policy_domain FROM tls_report_counts WHERE day = ? ORDER BY policy_domain',
          day,
        )
        .map((r) => r.policy_domain),
    claim: async (c) => claim(db, c),
    sent: async (day, domain, holder, now, results) =>
      void db.run(
        'UPDATE tls_reports_sent SET sent_at = ?, results = ? WHERE day = ? AND domain = ? AND holder = ? AND sent_at IS NULL',
        now,
        results,
        day,
        domain,
        holder,
      ),
    release: async (day, domain, holder) =>
      void db.run(
        'DELETE FROM tls_reports_sent WHERE day = ? AND domain = ? AND holder = ? AND sent_at IS NULL',
        day,
        domain,
        holder,
      ),
    sentOn: async (day) =>
      db.all<TlsReportRecord>(
        'SELECT day, domain, report_id, holder, claimed_at, sent_at, results FROM tls_reports_sent WHERE day = ? ORDER BY domain',
        day,
      ),
  };
}
