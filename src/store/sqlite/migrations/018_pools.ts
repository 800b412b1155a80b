/**
 * 018: pools of source addresses (docs/delivery.md, "Sending identities"): a customer's default
 * pool and the pools it may choose per send (a JSON array), the pool a message chose, and the
 * source address a recipient was last tried from (kept on a retry while it is in its pool). As
 * on PostgreSQL (store/pg/schema.ts version 11).
 */
export const up = `
ALTER TABLE customers ADD COLUMN default_pool TEXT;
ALTER TABLE customers ADD COLUMN allowed_pools TEXT NOT NULL DEFAULT '[]';
ALTER TABLE messages ADD COLUMN pool TEXT;
ALTER TABLE recipients ADD COLUMN source_ip TEXT;
`;
