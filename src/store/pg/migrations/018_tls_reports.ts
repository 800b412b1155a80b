/**
 * 018: SMTP TLS reporting, as SQLite's 025 (store/sqlite/migrations/): sessions counted per UTC
 * day under their policy and failure hashed, and the reports claimed and sent, one per domain and day.
 */
export const up = `
CREATE TABLE tls_report_counts (
  day text NOT NULL,
  key text NOT NULL,
  policy_domain text NOT NULL,
  policy text NOT NULL,
  failure text,
  sessions bigint NOT NULL,
  PRIMARY KEY (day, key)
);
CREATE INDEX tls_report_counts_domain ON tls_report_counts (day, policy_domain);
CREATE TABLE tls_reports_sent (
  day text NOT NULL,
  domain text NOT NULL,
  report_id text NOT NULL,
  holder text NOT NULL,
  claimed_at bigint NOT NULL,
  sent_at bigint,
  results text,
  PRIMARY KEY (day, domain)
);
`;
