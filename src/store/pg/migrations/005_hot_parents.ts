/**
 * 5: no foreign keys to customers and API keys from the rows every send and every delivery
 * writes (messages, recipients, events). PostgreSQL checks such a key by locking the parent row
 * (FOR KEY SHARE), so every concurrent transaction of one customer locked the same customer row
 * and the same key row: shared locks held by several transactions at once become multixacts,
 * which cost more than the insert itself (the accept benchmark spent about a fifth of the
 * database's CPU on them, bench/RESULTS.md). Nothing is lost by it: customers and keys are never
 * deleted (a key is revoked, its row stays), and a row's customer and key come from the
 * authenticated key the same statement checks. The keys between a message and its recipients,
 * events and tags stay. The SQLite engine keeps all of them (it checks a key without a lock).
 */
export const up = `
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_customer_id_fkey, DROP CONSTRAINT IF EXISTS messages_api_key_id_fkey;
ALTER TABLE recipients DROP CONSTRAINT IF EXISTS recipients_customer_id_fkey;
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_customer_id_fkey;
`;
