/**
 * 024: send quotas (domain/quotas.ts). A customer's own limits (null: the server's default from
 * [limits]) and the recipients accepted per window, counted in the accepting transaction
 * (store/sqlite/quotas.ts). A window's key: `m<minute>`, `d<day>`, `M<month>` since the epoch,
 * UTC. As on PostgreSQL (store/pg/schema.ts version 17), which adds a shard.
 */
export const up = `
ALTER TABLE customers ADD COLUMN send_per_minute INTEGER;
ALTER TABLE customers ADD COLUMN send_per_day INTEGER;
ALTER TABLE customers ADD COLUMN send_per_month INTEGER;
CREATE TABLE send_usage (
  customer_id INTEGER NOT NULL,
  sandbox     INTEGER NOT NULL,
  period      TEXT NOT NULL,
  count       INTEGER NOT NULL,
  PRIMARY KEY (customer_id, sandbox, period)
) WITHOUT ROWID;
`;
