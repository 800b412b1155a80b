import type { SuppressionRow } from '../model.js';
import type { SuppressionStore } from '../store.js';
import type { PgDb } from './db.js';

/** Suppressions in bulk on PostgreSQL: many added in one statement, the list read in address order for an export. */
export function pgSuppressionBulk(db: PgDb): Pick<SuppressionStore, 'addMany' | 'page'> {
  return {
    addMany: async (customerId, entries, now) => {
      if (entries.length === 0) return [];
      const added = await db.rows<{ address: string }>(
        `INSERT INTO suppressions (customer_id, address, reason, message_id, created_at)
         SELECT $1, e.address, e.reason, NULL, $4 FROM unnest($2::text[], $3::text[]) AS e(address, reason)
         ON CONFLICT (customer_id, address) DO NOTHING RETURNING address`,
        [customerId, entries.map((e) => e.address), entries.map((e) => e.reason), now],
      );
      const fresh = new Set(added.map((r) => r.address));
      // An entry given twice is added once: the first is new, the next already there.
      return entries.map((e) => fresh.delete(e.address));
    },
    page: (customerId, after, limit) =>
      // Byte order (COLLATE "C"), as SQLite compares.
      db.rows<SuppressionRow>(
        `SELECT s.address, s.reason, m.message_id, s.created_at FROM suppressions s LEFT JOIN messages m ON m.id = s.message_id
         WHERE s.customer_id = $1 AND s.address COLLATE "C" > $2 ORDER BY s.address COLLATE "C" LIMIT $3`,
        [customerId, after ?? '', limit],
      ),
  };
}
