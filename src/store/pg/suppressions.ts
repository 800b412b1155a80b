import { addressKey, suppressedBy, suppressionKeys } from '../../domain/addresses.js';
import { type UnsubscribeMethod, type UnsubscribeResult, unsubscribedEventData } from '../../domain/unsubscribe.js';
import type { SimulatedSuppression, SuppressionReason, SuppressionRow } from '../model.js';
import type { SuppressionStore } from '../store.js';
import { simulatedSuppressionView } from '../views.js';
import type { PgDb } from './db.js';
import { insertEvents } from './transitions.js';

/** Suppressions on PostgreSQL: one statement each, as on SQLite. */
export function pgSuppressions(db: PgDb): SuppressionStore {
  return {
    find: (customerId, addresses) => findSuppressions(db, customerId, addresses),
    add: async (input) =>
      (await db.run(
        'INSERT INTO suppressions (customer_id, address, reason, message_id, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (customer_id, address) DO NOTHING',
        [input.customerId, addressKey(input.address), input.reason, input.messageRowId ?? null, input.now],
      )) > 0,
    list: (customerId, opts) =>
      db.rows<SuppressionRow>(
        `SELECT s.address, s.reason, m.message_id, s.created_at FROM suppressions s LEFT JOIN messages m ON m.id = s.message_id
         WHERE s.customer_id = $1 AND s.created_at < $2 AND ($3::text IS NULL OR s.reason = $3) ORDER BY s.created_at DESC, s.address LIMIT $4`,
        [customerId, opts.before ?? Number.MAX_SAFE_INTEGER, opts.reason ?? null, opts.limit],
      ),
    remove: async (customerId, address) =>
      (await db.run('DELETE FROM suppressions WHERE customer_id = $1 AND address = $2', [
        customerId,
        addressKey(address),
      ])) > 0,
    search: (customerId, prefix, limit) => {
      const p = prefix.toLowerCase();
      // A range over the primary key, byte order (COLLATE "C"), as SQLite compares.
      return db.rows<SuppressionRow>(
        `SELECT s.address, s.reason, m.message_id, s.created_at FROM suppressions s LEFT JOIN messages m ON m.id = s.message_id
         WHERE s.customer_id = $1 AND s.address COLLATE "C" >= $2 AND s.address COLLATE "C" < $3 ORDER BY s.address COLLATE "C" LIMIT $4`,
        [customerId, p, `${p}\uffff`, limit],
      );
    },
    simulated: (customerId, addresses, limit) => simulatedSuppressions(db, customerId, addresses, limit),
    ...pgSuppressionBulk(db),
    unsubscribe: (recipientId, method, now) => unsubscribe(db, recipientId, method, now),
  };
}

/** The reasons the customer's list gives for those of `addresses` on it or at a domain on it, by addressKey. */
async function findSuppressions(
  db: PgDb,
  customerId: number,
  addresses: string[],
): Promise<Map<string, SuppressionReason>> {
  if (addresses.length === 0) return new Map();
  // Each address's own entry and its domain's (domain/addresses.ts, suppressionKeys).
  const keys = addresses.map(suppressionKeys);
  const rows = await db.rows<{ address: string; reason: SuppressionReason }>(
    'SELECT address, reason FROM suppressions WHERE customer_id = $1 AND address = ANY($2::text[])',
    [customerId, [...new Set(keys.flat())]],
  );
  return suppressedBy(keys, rows);
}

/** What sandbox messages' simulated bounces and complaints suppressed (their `recipient.suppressed` events), newest first. */
async function simulatedSuppressions(
  db: PgDb,
  customerId: number,
  addresses: string[],
  limit: number,
): Promise<SimulatedSuppression[]> {
  if (addresses.length === 0) return [];
  const rows = await db.rows<{ address: string; message_id: string; created_at: number; body: string }>(
    `SELECT r.address, m.message_id, e.created_at, e.body FROM recipients r
     JOIN messages m ON m.id = r.message_id
     JOIN events e ON e.message_id = r.message_id AND e.recipient_id = r.id AND e.type = 'recipient.suppressed'
     WHERE r.address = ANY($1::text[]) AND r.customer_id = $2 AND m.sandbox = 1
     ORDER BY e.seq DESC LIMIT $3`,
    [addresses, customerId, limit],
  );
  return rows.map(simulatedSuppressionView);
}

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

/** A recipient's unsubscribe, as store/sqlite/suppressions.ts writes it: suppressed and `recipient.unsubscribed`, in one transaction, once. */
export function unsubscribe(
  db: PgDb,
  recipientId: number,
  method: UnsubscribeMethod,
  now: number,
): Promise<UnsubscribeResult> {
  return db.tx(async (q) => {
    const r = await q.row<{
      customer_id: number;
      address: string;
      id: number;
      message_id: string;
      header_message_id: string | null;
    }>(
      `SELECT r.customer_id, r.address, m.id, m.message_id, m.header_message_id FROM recipients r
       JOIN messages m ON m.id = r.message_id WHERE r.id = $1`,
      [recipientId],
    );
    if (!r) return 'unknown';
    const added = await q.run(
      `INSERT INTO suppressions (customer_id, address, reason, message_id, created_at) VALUES ($1, $2, 'unsubscribe', $3, $4)
       ON CONFLICT (customer_id, address) DO NOTHING`,
      [r.customer_id, addressKey(r.address), r.id, now],
    );
    if (added === 0) return 'already';
    const m = { id: Number(r.id), messageId: r.message_id, headerMessageId: r.header_message_id };
    await insertEvents(
      q,
      [
        {
          customerId: Number(r.customer_id),
          type: 'recipient.unsubscribed',
          data: unsubscribedEventData(m, r.address, method, now),
          messageRowId: m.id,
          recipientId,
        },
      ],
      now,
    );
    return 'unsubscribed';
  });
}
