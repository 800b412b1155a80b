/** 003: received messages, bounce and complaint reports, inbound limits. */
export const up = `
CREATE TABLE inbound_messages (
  id            TEXT PRIMARY KEY,              -- "in_…" (GET /api/v1/inbound/:id)
  customer_id   INTEGER NOT NULL REFERENCES customers(id),
  domain_id     INTEGER REFERENCES domains(id) ON DELETE SET NULL,
  mail_from     TEXT NOT NULL,                 -- envelope sender ('' for <>)
  rcpt_to       TEXT NOT NULL,                 -- JSON array: this customer's envelope recipients
  remote_ip     TEXT NOT NULL,
  helo          TEXT NOT NULL,
  raw           BLOB NOT NULL,                 -- the message as received
  size          INTEGER NOT NULL,
  from_header   TEXT NOT NULL DEFAULT '',
  subject       TEXT NOT NULL DEFAULT '',
  message_id    TEXT NOT NULL DEFAULT '',
  attachments   INTEGER NOT NULL DEFAULT 0,
  auth          TEXT NOT NULL DEFAULT '{}',    -- JSON {spf, dkim, dmarc} results
  created_at    INTEGER NOT NULL
);
CREATE INDEX inbound_messages_customer ON inbound_messages(customer_id, created_at);

CREATE TABLE inbound_reports (
  id            INTEGER PRIMARY KEY,
  kind          TEXT NOT NULL CHECK (kind IN ('dsn', 'arf')),
  recipient_id  INTEGER REFERENCES recipients(id),   -- NULL: matched nothing (kept, never bounced back)
  mail_from     TEXT NOT NULL,
  rcpt_to       TEXT NOT NULL,
  summary       TEXT NOT NULL,                 -- JSON: what the parser read
  raw           BLOB NOT NULL,
  created_at    INTEGER NOT NULL
);

-- Per-domain inbound limits (NULL: the [inbound] defaults) and usage counters.
ALTER TABLE domains ADD COLUMN inbound_rate_per_minute INTEGER;
ALTER TABLE domains ADD COLUMN inbound_monthly_limit INTEGER;
CREATE TABLE inbound_usage (
  domain_id  INTEGER NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  period     TEXT NOT NULL,                    -- "m:<minute number>" or "M:<yyyy-mm>"
  count      INTEGER NOT NULL,
  PRIMARY KEY (domain_id, period)
) WITHOUT ROWID;
CREATE TABLE inbound_limited (
  domain_id  INTEGER PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  last_at    INTEGER NOT NULL                  -- when inbound.limited last fired (once per hour)
);
`;
