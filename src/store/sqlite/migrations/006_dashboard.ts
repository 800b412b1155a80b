/**
 * 006: the dashboard. Its users and their sessions; hourly activity counters kept by triggers in
 * the transaction of the change they count (the overview reads at most 7 × 24 rows, never the
 * messages); a key's last send; and the indexes the message search needs at a million messages.
 */
export const up = `
CREATE TABLE users (
  id             INTEGER PRIMARY KEY,
  email          TEXT NOT NULL UNIQUE,          -- lower-case
  password_hash  TEXT NOT NULL,                 -- "scrypt$N$r$p$salt$hash", Base64 parts
  role           TEXT NOT NULL CHECK (role IN ('admin', 'customer')),
  customer_id    INTEGER REFERENCES customers(id),  -- the customer a customer's user sees; NULL for admins
  created_at     INTEGER NOT NULL,
  CHECK ((role = 'admin') = (customer_id IS NULL))
);

CREATE TABLE sessions (
  id_hash        BLOB PRIMARY KEY,              -- SHA-256 of the cookie's session id; the id itself is never stored
  user_id        INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  csrf           TEXT NOT NULL,                 -- the token every form of the session carries
  customer_id    INTEGER NOT NULL REFERENCES customers(id),  -- the customer shown (an admin switches)
  created_at     INTEGER NOT NULL,
  last_seen_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions(user_id);

CREATE TABLE activity_hourly (
  customer_id  INTEGER NOT NULL,
  hour         INTEGER NOT NULL,                -- created_at / 3600000
  kind         TEXT NOT NULL,                   -- accepted, delivered, deferred, bounced, complained
  count        INTEGER NOT NULL,
  PRIMARY KEY (customer_id, hour, kind)
) WITHOUT ROWID;

CREATE TRIGGER activity_accepted AFTER INSERT ON recipients BEGIN
  INSERT INTO activity_hourly (customer_id, hour, kind, count) VALUES (NEW.customer_id, NEW.created_at / 3600000, 'accepted', 1)
  ON CONFLICT (customer_id, hour, kind) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER activity_events AFTER INSERT ON events
  WHEN NEW.type IN ('email.delivered', 'email.deferred', 'email.bounced', 'email.complained') BEGIN
  INSERT INTO activity_hourly (customer_id, hour, kind, count) VALUES (NEW.customer_id, NEW.created_at / 3600000, substr(NEW.type, 7), 1)
  ON CONFLICT (customer_id, hour, kind) DO UPDATE SET count = count + 1;
END;

-- A key's last send, kept by the insert of its message. The auth epoch now moves only when what
-- authentication reads changes, so a send does not empty the key cache.
ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;
DROP TRIGGER api_keys_epoch_u;
CREATE TRIGGER api_keys_epoch_u AFTER UPDATE OF id, customer_id, kind, hash, revoked_at ON api_keys BEGIN UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch'; END;
CREATE TRIGGER api_keys_last_used AFTER INSERT ON messages WHEN NEW.api_key_id IS NOT NULL BEGIN
  UPDATE api_keys SET last_used_at = NEW.created_at WHERE id = NEW.api_key_id;
END;

-- Message search: by recipient address, and by the final states that are rare (a scan for them
-- would read the whole table). Delivered is common and queued/deferred have recipients_due.
CREATE INDEX recipients_address ON recipients(address);
CREATE INDEX recipients_failed ON recipients(customer_id, state, message_id) WHERE state IN ('bounced', 'complained', 'suppressed');
`;
