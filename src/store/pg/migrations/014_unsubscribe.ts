/**
 * 014: one-click unsubscribe, as SQLite's 021 (store/sqlite/migrations/): a message's
 * `unsubscribe`, a customer's default, and `unsubscribe` among the suppression reasons.
 */
export const up = `
ALTER TABLE messages ADD COLUMN unsubscribe integer NOT NULL DEFAULT 0;
ALTER TABLE customers ADD COLUMN unsubscribe integer NOT NULL DEFAULT 0;
ALTER TABLE suppressions DROP CONSTRAINT suppressions_reason_check;
ALTER TABLE suppressions ADD CONSTRAINT suppressions_reason_check
  CHECK (reason IN ('hard_bounce', 'spam_complaint', 'manual', 'unsubscribe'));
`;
