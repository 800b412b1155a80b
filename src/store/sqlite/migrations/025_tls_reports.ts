/**
 * 025: SMTP TLS reporting (docs/delivery.md, "TLS reports (RFC 8460)"): sessions counted per UTC
 * day under a key that is their policy and failure hashed (domain/tls-report.ts countKey), and the
 * reports claimed and sent, one per domain and day. As on PostgreSQL (store/pg/schema.ts version 18).
 */
export const up = `
CREATE TABLE tls_report_counts (
  day           TEXT NOT NULL,
  key           TEXT NOT NULL,
  policy_domain TEXT NOT NULL,
  policy        TEXT NOT NULL,
  failure       TEXT,
  sessions      INTEGER NOT NULL,
  PRIMARY KEY (day, key)
) WITHOUT ROWID;
CREATE INDEX tls_report_counts_domain ON tls_report_counts (day, policy_domain);
CREATE TABLE tls_reports_sent (
  day        TEXT NOT NULL,
  domain     TEXT NOT NULL,
  report_id  TEXT NOT NULL,
  holder     TEXT NOT NULL,
  claimed_at INTEGER NOT NULL,
  sent_at    INTEGER,
  results    TEXT,
  PRIMARY KEY (day, domain)
) WITHOUT ROWID;
`;
