/**
 * 008: scheduled sends, cancellation and tags. A scheduled message's recipients are queued with
 * their first attempt due at `scheduled_at`; a canceled one's recipients get the state
 * `canceled`, which the state CHECK did not allow: SQLite cannot change a CHECK in place, so the
 * recipients table is rebuilt (https://www.sqlite.org/lang_altertable.html, "Making Other Kinds
 * Of Table Schema Changes"), with its indexes and trigger, foreign keys off while it runs
 * (migrate() does that for migrations marked `rebuild`). Tags are kept on the message (JSON, for
 * events) and in message_tags, the index the tag filter starts from. The index of failed
 * recipients (006's recipients_failed) becomes recipients_undelivered: the deferred and the
 * canceled too, so a search or the overview finds them without reading the whole queue (queued
 * recipients stay out of it: the accept path writes no more index entries than before).
 */
export const rebuild = true;
export const up = `
ALTER TABLE messages ADD COLUMN scheduled_at INTEGER;
ALTER TABLE messages ADD COLUMN tags TEXT;

CREATE TABLE message_tags (
  customer_id  INTEGER NOT NULL,
  tag          TEXT NOT NULL,
  message_id   INTEGER NOT NULL REFERENCES messages(id),
  PRIMARY KEY (customer_id, tag, message_id)
) WITHOUT ROWID;

CREATE TABLE recipients_new (
  id               INTEGER PRIMARY KEY,
  message_id       INTEGER NOT NULL REFERENCES messages(id),
  customer_id      INTEGER NOT NULL REFERENCES customers(id),
  address          TEXT NOT NULL,              -- addr-spec, domain in ASCII
  domain           TEXT NOT NULL,              -- destination domain, for grouping and concurrency
  field            TEXT NOT NULL CHECK (field IN ('to', 'cc', 'bcc')),
  state            TEXT NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'deferred', 'delivered', 'bounced', 'complained', 'suppressed', 'canceled')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER,                    -- due time while queued or deferred; null when final
  last_response    TEXT,                       -- JSON {code, enhanced_code, classification, message}
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
INSERT INTO recipients_new (id, message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, last_response, created_at, updated_at)
  SELECT id, message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, last_response, created_at, updated_at FROM recipients;
DROP TABLE recipients;
ALTER TABLE recipients_new RENAME TO recipients;
CREATE INDEX recipients_message ON recipients(message_id);
CREATE INDEX recipients_due ON recipients(next_attempt_at, message_id, domain, attempts, address, state) WHERE state IN ('queued', 'deferred');
CREATE INDEX recipients_address ON recipients(address);
-- Written with OR, not IN: SQLite uses a partial index only when the query's WHERE implies the
-- index's, and "state = 'bounced'" implies a disjunction that names it, not an IN list.
CREATE INDEX recipients_undelivered ON recipients(customer_id, state, message_id)
  WHERE state = 'deferred' OR state = 'bounced' OR state = 'complained' OR state = 'suppressed' OR state = 'canceled';
CREATE TRIGGER activity_accepted AFTER INSERT ON recipients BEGIN
  INSERT INTO activity_hourly (customer_id, hour, kind, count) VALUES (NEW.customer_id, NEW.created_at / 3600000, 'accepted', 1)
  ON CONFLICT (customer_id, hour, kind) DO UPDATE SET count = count + 1;
END;
`;
