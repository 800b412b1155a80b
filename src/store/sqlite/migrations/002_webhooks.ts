/** 002: webhook endpoints, one delivery row per (event, endpoint), and the attempt log. */
export const up = `
CREATE TABLE webhook_endpoints (
  id              TEXT PRIMARY KEY,              -- "wh_…"
  customer_id     INTEGER NOT NULL REFERENCES customers(id),
  url             TEXT NOT NULL,
  events          TEXT,                          -- JSON array of event types; NULL: all types
  description     TEXT NOT NULL DEFAULT '',
  secret          TEXT NOT NULL,                 -- "whsec_" + Base64 of 32 random bytes
  enabled         INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,                          -- e.g. "410 Gone"
  created_at      INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_customer ON webhook_endpoints(customer_id);

CREATE TABLE webhook_deliveries (
  id               INTEGER PRIMARY KEY,
  endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_seq        INTEGER NOT NULL REFERENCES events(seq),
  kind             TEXT NOT NULL DEFAULT 'event' CHECK (kind IN ('event', 'replay')),
  state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER,                      -- due time while pending
  locked_by        TEXT,
  locked_at        INTEGER,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries(event_seq, endpoint_id) WHERE kind = 'event';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, id);

CREATE TABLE webhook_attempts (
  id           INTEGER PRIMARY KEY,
  endpoint_id  TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  delivery_id  INTEGER REFERENCES webhook_deliveries(id) ON DELETE CASCADE,  -- NULL for test events
  event_id     TEXT NOT NULL,                   -- the webhook-id sent
  event_type   TEXT NOT NULL,
  attempt      INTEGER NOT NULL,
  at           INTEGER NOT NULL,
  status       INTEGER,                         -- HTTP status; NULL when no response
  error        TEXT,                            -- timeout, connection refused, refused by the address guard…
  duration_ms  INTEGER NOT NULL,
  response     TEXT                             -- the first 1 KiB of the response body
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts(endpoint_id, id);

-- The fan-out cursor: events up to this seq have their delivery rows. Event seqs are assigned
-- inside write transactions, which SQLite runs one at a time, so seq order is commit order and
-- a cursor cannot skip an event.
INSERT INTO settings (name, value) VALUES ('webhook_fanout_seq', '0');
`;
