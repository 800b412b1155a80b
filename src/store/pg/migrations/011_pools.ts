/**
 * 011: pools of source addresses, as SQLite's 018 (store/sqlite/migrations/): a customer's
 * default pool and allowed pools (a JSON array), a message's chosen pool, a recipient's source
 * address.
 */
export const up = `
ALTER TABLE customers ADD COLUMN default_pool text;
ALTER TABLE customers ADD COLUMN allowed_pools text NOT NULL DEFAULT '[]';
ALTER TABLE messages ADD COLUMN pool text;
ALTER TABLE recipients ADD COLUMN source_ip text;
`;
