import {
  type DmarcCounts,
  type DmarcDaySource,
  type DmarcKept,
  type DmarcMailInput,
  type DmarcReportInput,
  type DmarcSummaryQuery,
  dmarcKept,
} from '../model.js';
import type { DmarcStore } from '../store.js';
import { dmarcRowColumns, policyColumn, unreadableColumns } from '../views.js';
import type { Db } from './db.js';

/** One mail's reports in one transaction: each new report with its rows, a report received before skipped, the unreadable kept. */
export function keepDmarc(db: Db, input: DmarcMailInput): DmarcKept {
  return db.tx(() => {
    const stored = input.reports.map((report) => keepReport(db, report, input.receivedAt));
    for (const u of unreadableColumns(input))
      db.run('INSERT INTO dmarc_unreadable (received_at, name, error, raw) VALUES (?, ?, ?, ?)', ...u);
    return dmarcKept(stored, input.unreadable.length);
  });
}

function keepReport(db: Db, r: DmarcReportInput, now: number): boolean {
  const owner = db.get<{ customer_id: number }>('SELECT customer_id FROM domains WHERE name = ?', r.domain);
  const row = db.get<{ id: number }>(
    `INSERT INTO dmarc_reports (received_at, org, email, report_id, domain, customer_id, date_begin, date_end, policy)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (org, report_id) DO NOTHING RETURNING id`,
    now,
    r.org,
    r.email,
    r.reportId,
    r.domain,
    owner?.customer_id ?? null,
    r.begin,
    r.end,
    policyColumn(r),
  );
  if (!row) return false;
  for (const w of r.rows)
    db.run(
      `INSERT INTO dmarc_rows (report_id, source_ip, count, disposition, dkim_aligned, spf_aligned, header_from, envelope_from, auth)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.id,
      ...dmarcRowColumns(w),
    );
  return true;
}

/** Per UTC day (of the period's start) and source address, newest day first, the most mail first. */
export function dmarcSummary(db: Db, q: DmarcSummaryQuery): DmarcDaySource[] {
  const rows = db.all<Omit<DmarcDaySource, 'reporters'> & { reporters: string }>(
    `SELECT strftime('%Y-%m-%d', r.date_begin / 1000, 'unixepoch') AS day, w.source_ip,
            SUM(w.count) AS messages, SUM(w.dkim_aligned * w.count) AS dkim_aligned,
            SUM(w.spf_aligned * w.count) AS spf_aligned,
            SUM(CASE WHEN w.dkim_aligned = 1 OR w.spf_aligned = 1 THEN w.count ELSE 0 END) AS dmarc_pass,
            group_concat(DISTINCT r.org) AS reporters
     FROM dmarc_reports r JOIN dmarc_rows w ON w.report_id = r.id
     WHERE r.domain = ? AND r.date_begin >= ? AND r.date_begin < ? AND (? IS NULL OR r.customer_id = ?)
     GROUP BY day, w.source_ip ORDER BY day DESC, messages DESC, w.source_ip`,
    q.domain,
    q.since,
    q.until,
    q.customerId ?? null,
    q.customerId ?? null,
  );
  return rows.map((r) => ({ ...r, reporters: r.reporters.split(',').sort() }));
}

export function dmarcCounts(db: Db): DmarcCounts {
  const r = db.get<{ reports: number; foreign_reports: number; unreadable: number }>(
    `SELECT (SELECT count(*) FROM dmarc_reports) AS reports,
            (SELECT count(*) FROM dmarc_reports WHERE customer_id IS NULL) AS foreign_reports,
            (SELECT count(*) FROM dmarc_unreadable) AS unreadable`,
  )!;
  return { reports: r.reports, foreign: r.foreign_reports, unreadable: r.unreadable };
}

export function sqliteDmarc(db: Db): DmarcStore {
  return {
    keep: async (input) => keepDmarc(db, input),
    summary: async (q) => dmarcSummary(db, q),
    counts: async () => dmarcCounts(db),
  };
}
