import {
  type DmarcCounts,
  type DmarcDaySource,
  type DmarcKept,
  type DmarcMailInput,
  type DmarcReportInput,
  dmarcKept,
} from '../model.js';
import type { DmarcStore } from '../store.js';
import { dmarcRowColumns, policyColumn, unreadableColumns } from '../views.js';
import type { PgDb, Q } from './db.js';

/** One mail's reports in one transaction, as SQLite's (store/sqlite/dmarc.ts). */
async function keepDmarc(db: PgDb, input: DmarcMailInput): Promise<DmarcKept> {
  return db.tx(async (q) => {
    const stored: boolean[] = [];
    for (const report of input.reports) stored.push(await keepReport(q, report, input.receivedAt));
    for (const u of unreadableColumns(input))
      await q.run('INSERT INTO dmarc_unreadable (received_at, name, error, raw) VALUES ($1, $2, $3, $4)', u);
    return dmarcKept(stored, input.unreadable.length);
  });
}

async function keepReport(q: Q, r: DmarcReportInput, now: number): Promise<boolean> {
  const row = await q.row<{ id: number }>(
    `INSERT INTO dmarc_reports (received_at, org, email, report_id, domain, customer_id, date_begin, date_end, policy)
     VALUES ($1, $2, $3, $4, $5, (SELECT customer_id FROM domains WHERE name = $5), $6, $7, $8)
     ON CONFLICT (org, report_id) DO NOTHING RETURNING id`,
    [now, r.org, r.email, r.reportId, r.domain, r.begin, r.end, policyColumn(r)],
  );
  if (!row) return false;
  if (r.rows.length === 0) return true;
  // The rows in one statement: each column an array, unnested together.
  const rows = r.rows.map(dmarcRowColumns);
  await q.run(
    `INSERT INTO dmarc_rows (report_id, source_ip, count, disposition, dkim_aligned, spf_aligned, header_from, envelope_from, auth)
     SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::int[], $6::int[], $7::text[], $8::text[], $9::text[])`,
    [row.id, ...rows[0]!.map((_, i) => rows.map((w) => w[i]))],
  );
  return true;
}

export function pgDmarc(db: PgDb): DmarcStore {
  return {
    keep: (input) => keepDmarc(db, input),
    summary: async (q) => {
      const rows = await db.rows<Omit<DmarcDaySource, 'reporters'> & { reporters: string[] }>(
        `SELECT to_char(to_timestamp(r.date_begin / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, w.source_ip,
                SUM(w.count)::bigint AS messages, SUM(w.dkim_aligned * w.count)::bigint AS dkim_aligned,
                SUM(w.spf_aligned * w.count)::bigint AS spf_aligned,
                SUM(CASE WHEN w.dkim_aligned = 1 OR w.spf_aligned = 1 THEN w.count ELSE 0 END)::bigint AS dmarc_pass,
                array_agg(DISTINCT r.org COLLATE "C" ORDER BY r.org COLLATE "C") AS reporters
         FROM dmarc_reports r JOIN dmarc_rows w ON w.report_id = r.id
         WHERE r.domain = $1 AND r.date_begin >= $2 AND r.date_begin < $3 AND ($4::bigint IS NULL OR r.customer_id = $4)
         GROUP BY day, w.source_ip ORDER BY day DESC, messages DESC, w.source_ip COLLATE "C"`,
        [q.domain, q.since, q.until, q.customerId ?? null],
      );
      return rows;
    },
    counts: async (): Promise<DmarcCounts> => {
      const r = await db.row<{ reports: number; foreign_reports: number; unreadable: number }>(
        `SELECT (SELECT count(*) FROM dmarc_reports)::int AS reports,
                (SELECT count(*) FROM dmarc_reports WHERE customer_id IS NULL)::int AS foreign_reports,
                (SELECT count(*) FROM dmarc_unreadable)::int AS unreadable`,
      );
      return { reports: r!.reports, foreign: r!.foreign_reports, unreadable: r!.unreadable };
    },
  };
}
