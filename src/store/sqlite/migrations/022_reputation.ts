/**
 * 022: a customer's reputation state (docs/operations.md, "Reputation"): ok, warning or paused,
 * why and by whom it was paused, and where its counters start (a resume restarts the window: the
 * counters of the resume's hour as they stood are kept to be subtracted). A customer without a
 * row is ok. A change of `paused_at` moves the auth epoch, so the API's cached answer of "not
 * paused" is checked again by the commit (store/auth-cache.ts). As on PostgreSQL (store/pg/schema.ts
 * version 15).
 */
export const up = `
CREATE TABLE customer_reputation (
  customer_id      INTEGER PRIMARY KEY REFERENCES customers(id),
  state            TEXT NOT NULL CHECK (state IN ('ok', 'warning', 'paused')),
  paused_at        INTEGER,                   -- set while paused: its queue is held, its sends refused
  reason           TEXT,                      -- why it was paused (the rates, or the administrator's words)
  paused_by        TEXT CHECK (paused_by IN ('reputation', 'administrator')),
  changed_at       INTEGER NOT NULL,
  since            INTEGER NOT NULL DEFAULT 0,  -- counted from (the last resume, ms)
  base_outcome     INTEGER NOT NULL DEFAULT 0,  -- the counters of since's hour at the resume
  base_hard        INTEGER NOT NULL DEFAULT 0,
  base_expired     INTEGER NOT NULL DEFAULT 0,
  base_delivered   INTEGER NOT NULL DEFAULT 0,
  base_complained  INTEGER NOT NULL DEFAULT 0,
  CHECK ((state = 'paused') = (paused_at IS NOT NULL))
) WITHOUT ROWID;
CREATE INDEX customer_reputation_paused ON customer_reputation(customer_id) WHERE paused_at IS NOT NULL;
CREATE TRIGGER customer_reputation_epoch_i AFTER INSERT ON customer_reputation WHEN NEW.paused_at IS NOT NULL BEGIN
  UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch';
END;
CREATE TRIGGER customer_reputation_epoch_u AFTER UPDATE OF paused_at ON customer_reputation
  WHEN (OLD.paused_at IS NULL) <> (NEW.paused_at IS NULL) BEGIN
  UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch';
END;
`;
