/**
 * 021: one-click unsubscribe (docs/delivery.md, "One-click unsubscribe"): a message asks for the
 * List-Unsubscribe fields (`unsubscribe`, 1 when its send did), a customer adds them to all its
 * mail by default, and a suppression may be for `unsubscribe`. SQLite cannot change a CHECK in
 * place, so the suppressions table is copied into a new one (nothing refers to it). As on
 * PostgreSQL (store/pg/schema.ts version 14).
 */
export const up = `
ALTER TABLE messages ADD COLUMN unsubscribe INTEGER NOT NULL DEFAULT 0;
ALTER TABLE customers ADD COLUMN unsubscribe INTEGER NOT NULL DEFAULT 0;
CREATE TABLE suppressions_new (
  customer_id  INTEGER NOT NULL REFERENCES customers(id),
  address      TEXT NOT NULL,
  reason       TEXT NOT NULL CHECK (reason IN ('hard_bounce', 'spam_complaint', 'manual', 'unsubscribe')),
  message_id   INTEGER REFERENCES messages(id),
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (customer_id, address)
) WITHOUT ROWID;
INSERT INTO suppressions_new (customer_id, address, reason, message_id, created_at)
  SELECT customer_id, address, reason, message_id, created_at FROM suppressions;
DROP TABLE suppressions;
ALTER TABLE suppressions_new RENAME TO suppressions;
`;
