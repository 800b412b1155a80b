/**
 * 017: DMARC aggregate reports kept (docs/operations.md, "DMARC reports"): each report once (its
 * reporter's org and report id), its rows per source address, and the mails whose attachments
 * could not be read, kept for a look by hand. As on PostgreSQL (store/pg/schema.ts version 10).
 */
export const up = `
CREATE TABLE dmarc_reports (
  id INTEGER PRIMARY KEY,
  received_at INTEGER NOT NULL,
  org TEXT NOT NULL,
  email TEXT,
  report_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  customer_id INTEGER REFERENCES customers(id),
  date_begin INTEGER NOT NULL,
  date_end INTEGER NOT NULL,
  policy TEXT NOT NULL,
  UNIQUE (org, report_id)
);
CREATE INDEX dmarc_reports_domain ON dmarc_reports (domain, date_begin);
CREATE TABLE dmarc_rows (
  report_id INTEGER NOT NULL REFERENCES dmarc_reports(id) ON DELETE CASCADE,
  source_ip TEXT NOT NULL,
  count INTEGER NOT NULL,
  disposition TEXT NOT NULL,
  dkim_aligned INTEGER NOT NULL,
  spf_aligned INTEGER NOT NULL,
  header_from TEXT NOT NULL,
  envelope_from TEXT,
  auth TEXT NOT NULL
);
CREATE INDEX dmarc_rows_report ON dmarc_rows (report_id);
CREATE TABLE dmarc_unreadable (
  id INTEGER PRIMARY KEY,
  received_at INTEGER NOT NULL,
  name TEXT NOT NULL,
  error TEXT NOT NULL,
  raw BLOB NOT NULL
);
`;
