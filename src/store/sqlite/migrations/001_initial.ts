/**
 * 001: the foundation. Append-only: once shipped, never edit; add 002_… instead.
 * Times are integer milliseconds since the epoch (UTC); booleans are 0/1.
 */
export const up = `
CREATE TABLE customers (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,            -- e.g. "default"
  created_at  INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,               -- public handle "key_…": the 12 base62 chars after ph_live_/ph_test_
  customer_id  INTEGER NOT NULL REFERENCES customers(id),
  name         TEXT NOT NULL DEFAULT '',
  kind         TEXT NOT NULL CHECK (kind IN ('production', 'sandbox')),
  hash         BLOB NOT NULL,                  -- SHA-256 of the whole key; the key itself is never stored
  created_at   INTEGER NOT NULL,
  revoked_at   INTEGER                         -- non-null: refused from the next request on
);
CREATE INDEX api_keys_customer ON api_keys(customer_id);

CREATE TABLE domains (
  id                  INTEGER PRIMARY KEY,
  customer_id         INTEGER NOT NULL REFERENCES customers(id),
  name                TEXT NOT NULL UNIQUE,    -- lower-case ASCII (A-labels); one owner per domain
  verified_at         INTEGER,                 -- null: not verified, sending refused with 403
  receiving           INTEGER NOT NULL DEFAULT 0,
  verification_token  TEXT NOT NULL,
  dkim_selector       TEXT NOT NULL,
  dkim_private_key    TEXT NOT NULL,           -- PKCS#8 PEM
  dkim_public_key     TEXT NOT NULL,           -- Base64 SPKI DER, as published in p=
  created_at          INTEGER NOT NULL
);
CREATE INDEX domains_customer ON domains(customer_id);

CREATE TABLE messages (
  id             INTEGER PRIMARY KEY,          -- email_id in events
  customer_id    INTEGER NOT NULL REFERENCES customers(id),
  message_id     TEXT NOT NULL UNIQUE,         -- <unique>@<sender domain>, also the Message-ID header
  api_key_id     TEXT REFERENCES api_keys(id),
  sandbox        INTEGER NOT NULL,
  from_header    TEXT NOT NULL,                -- "Name <addr>" or addr, as events show it
  sender_domain  TEXT NOT NULL,
  subject        TEXT NOT NULL,
  metadata       TEXT NOT NULL DEFAULT '{}',   -- JSON object of string to string
  request        TEXT NOT NULL,                -- the send request's body as received (written as a BLOB: store/sqlite/messages.ts)
  raw            BLOB,                         -- the composed MIME message (unsigned), once first composed
  size           INTEGER,                      -- bytes of raw, once composed
  created_at     INTEGER NOT NULL
);
CREATE INDEX messages_customer ON messages(customer_id, id);

CREATE TABLE recipients (
  id               INTEGER PRIMARY KEY,
  message_id       INTEGER NOT NULL REFERENCES messages(id),
  customer_id      INTEGER NOT NULL REFERENCES customers(id),
  address          TEXT NOT NULL,              -- addr-spec, domain in ASCII
  domain           TEXT NOT NULL,              -- destination domain, for grouping and concurrency
  field            TEXT NOT NULL CHECK (field IN ('to', 'cc', 'bcc')),
  state            TEXT NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'deferred', 'delivered', 'bounced', 'complained', 'suppressed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER,                    -- due time while queued or deferred; null when final
  locked_by        TEXT,                       -- worker that claimed it
  locked_at        INTEGER,
  last_response    TEXT,                       -- JSON {code, enhanced_code, classification, message}
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE INDEX recipients_message ON recipients(message_id);
CREATE INDEX recipients_due ON recipients(next_attempt_at) WHERE state IN ('queued', 'deferred');

CREATE TABLE events (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,  -- outbox order for the dispatcher
  id            TEXT NOT NULL UNIQUE,               -- msg_…, the webhook-id
  customer_id   INTEGER NOT NULL REFERENCES customers(id),
  type          TEXT NOT NULL,
  message_id    INTEGER REFERENCES messages(id),
  recipient_id  INTEGER REFERENCES recipients(id),
  created_at    INTEGER NOT NULL,
  body          TEXT NOT NULL                        -- the envelope JSON exactly as webhooks send it
);
CREATE INDEX events_message ON events(message_id);

CREATE TABLE suppressions (
  customer_id  INTEGER NOT NULL REFERENCES customers(id),
  address      TEXT NOT NULL,                -- lower-case: compared case-insensitively
  reason       TEXT NOT NULL CHECK (reason IN ('hard_bounce', 'spam_complaint', 'manual')),
  message_id   INTEGER REFERENCES messages(id),
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (customer_id, address)
) WITHOUT ROWID;

CREATE TABLE idempotency_keys (
  customer_id    INTEGER NOT NULL REFERENCES customers(id),
  key            TEXT NOT NULL,
  request_hash   BLOB NOT NULL,              -- SHA-256 of the raw request body
  status         INTEGER NOT NULL,
  response       TEXT NOT NULL,              -- the first response body, replayed
  created_at     INTEGER NOT NULL,
  PRIMARY KEY (customer_id, key)
) WITHOUT ROWID;

CREATE TABLE settings (
  name   TEXT PRIMARY KEY,
  value  TEXT NOT NULL
) WITHOUT ROWID;

-- auth_epoch changes whenever a key or a domain changes, from any process (the CLI included), so
-- the API may cache keys and domains in memory and still see a revocation on the next request.
INSERT INTO settings (name, value) VALUES ('auth_epoch', '0');
CREATE TRIGGER api_keys_epoch_i AFTER INSERT ON api_keys BEGIN UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch'; END;
CREATE TRIGGER api_keys_epoch_u AFTER UPDATE ON api_keys BEGIN UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch'; END;
CREATE TRIGGER api_keys_epoch_d AFTER DELETE ON api_keys BEGIN UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch'; END;
CREATE TRIGGER domains_epoch_i AFTER INSERT ON domains BEGIN UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch'; END;
CREATE TRIGGER domains_epoch_u AFTER UPDATE ON domains BEGIN UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch'; END;
CREATE TRIGGER domains_epoch_d AFTER DELETE ON domains BEGIN UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch'; END;

CREATE TABLE health (
  id  INTEGER PRIMARY KEY CHECK (id = 1),
  at  INTEGER NOT NULL
);
`;
