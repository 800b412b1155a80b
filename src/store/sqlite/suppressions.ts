import { addressKey, suppressedBy, suppressionKeys } from '../../domain/addresses.js';
import { type UnsubscribeMethod, type UnsubscribeResult, unsubscribedEventData } from '../../domain/unsubscribe.js';
import type { SimulatedSuppression, SuppressionReason, SuppressionRow } from '../model.js';
import type { SuppressionStore } from '../store.js';
import { simulatedSuppressionView } from '../views.js';
import { BOUND_LIMIT, type Db } from './db.js';
import { recordEvent } from './events.js';

/**
 * The suppressed addresses among these, with their reasons (case-insensitive), keyed by
 * addressKey: those on the list themselves, and those whose whole domain is (`@example.com`;
 * domain/addresses.ts, suppressionKeys).
 */
export function findSuppressed(db: Db, customerId: number, addresses: string[]): Map<string, SuppressionReason> {
  const out = new Map<string, SuppressionReason>();
  if (addresses.length === 0) return out;
  if (addresses.length === 1) {
    // The common case on the accept path: one cached statement, no query building.
    const [key, domain] = suppressionKeys(addresses[0]!);
    const row = db.get<{ reason: SuppressionReason }>(
      'SELECT reason FROM suppressions WHERE customer_id = ? AND address IN (?, ?) ORDER BY length(address) DESC LIMIT 1',
      customerId,
      key!,
      domain ?? key!,
    );
    if (row) out.set(key!, row.reason);
    return out;
  }
  const keys = addresses.map(suppressionKeys);
  const all = [...new Set(keys.flat())];
  // One statement per list length (cached like any other; a message has at most limits.max_recipients).
  const rows = db.all<{ address: string; reason: SuppressionReason }>(
    `SELECT address, reason FROM suppressions WHERE customer_id = ? AND address IN (${all.map(() => '?').join(', ')})`,
    customerId,
    ...all,
  );
  return suppressedBy(keys, rows);
}

export function addSuppression(
  db: Db,
  input: { customerId: number; address: string; reason: SuppressionReason; messageRowId?: number; now: number },
): boolean {
  const r = db.run(
    'INSERT INTO suppressions (customer_id, address, reason, message_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (customer_id, address) DO NOTHING',
    input.customerId,
    addressKey(input.address),
    input.reason,
    input.messageRowId ?? null,
    input.now,
  );
  return r.changes > 0;
}

/** Newest first, paged by created_at (`before`), optionally one reason. */
export function listSuppressions(
  db: Db,
  customerId: number,
  opts: { limit: number; before?: number; reason?: string },
): SuppressionRow[] {
  const args: unknown[] = [customerId, opts.before ?? Number.MAX_SAFE_INTEGER];
  let where = 's.customer_id = ? AND s.created_at < ?';
  if (opts.reason) {
    where += ' AND s.reason = ?';
    args.push(opts.reason);
  }
  return db.sqlite
    .prepare(
      `SELECT s.address, s.reason, m.message_id, s.created_at FROM suppressions s LEFT JOIN messages m ON m.id = s.message_id WHERE ${where} ORDER BY s.created_at DESC, s.address ${BOUND_LIMIT}`,
    )
    .all(...args, opts.limit) as SuppressionRow[];
}

export function removeSuppression(db: Db, customerId: number, address: string): boolean {
  return (
    db.run('DELETE FROM suppressions WHERE customer_id = ? AND address = ?', customerId, addressKey(address)).changes >
    0
  );
}

/** Addresses starting with `prefix` (lower-cased), in address order, through the primary key. */
export function searchSuppressions(db: Db, customerId: number, prefix: string, limit: number): SuppressionRow[] {
  const p = prefix.toLowerCase();
  return db.all<SuppressionRow>(
    `SELECT s.address, s.reason, m.message_id, s.created_at FROM suppressions s LEFT JOIN messages m ON m.id = s.message_id
       WHERE s.customer_id = ? AND s.address >= ? AND s.address < ? ORDER BY s.address ${BOUND_LIMIT}`,
    customerId,
    p,
    p + '\uffff',
    limit,
  );
}

/**
 * What sandbox keys' simulated bounces and complaints suppressed, newest first: the
 * recipient.suppressed events of sandbox messages to `addresses` (the simulator's that suppress,
 * domain/sandbox.ts), which fire as for real mail but never add to the list (store/sqlite/transitions.ts
 * suppress). Read through recipients_address: the cost is the recipients at those addresses.
 */
export function simulatedSuppressions(
  db: Db,
  customerId: number,
  addresses: string[],
  limit: number,
): SimulatedSuppression[] {
  if (addresses.length === 0) return [];
  const rows = db.all<{ address: string; message_id: string; created_at: number; body: string }>(
    `SELECT r.address, m.message_id, e.created_at, e.body FROM recipients r
     JOIN messages m ON m.id = r.message_id
     JOIN events e ON e.message_id = r.message_id AND e.recipient_id = r.id AND e.type = 'recipient.suppressed'
     WHERE r.address IN (${addresses.map(() => '?').join(', ')}) AND r.customer_id = ? AND m.sandbox = 1
     ORDER BY e.seq DESC ${BOUND_LIMIT}`,
    ...addresses,
    customerId,
    limit,
  );
  return rows.map(simulatedSuppressionView);
}

/** Entries added in one transaction; for each, whether it was new. */
export function addSuppressions(
  db: Db,
  customerId: number,
  entries: Array<{ address: string; reason: SuppressionReason }>,
  now: number,
): boolean[] {
  return db.tx(() =>
    entries.map(
      (e) =>
        db.run(
          'INSERT INTO suppressions (customer_id, address, reason, message_id, created_at) VALUES (?, ?, ?, NULL, ?) ON CONFLICT (customer_id, address) DO NOTHING',
          customerId,
          e.address,
          e.reason,
          now,
        ).changes > 0,
    ),
  );
}

/** The list in address order after `after`, through the primary key. */
export function suppressionPage(
  db: Db,
  customerId: number,
  after: string | undefined,
  limit: number,
): SuppressionRow[] {
  return db.all<SuppressionRow>(
    `SELECT s.address, s.reason, m.message_id, s.created_at FROM suppressions s LEFT JOIN messages m ON m.id = s.message_id
       WHERE s.customer_id = ? AND s.address > ? ORDER BY s.address ${BOUND_LIMIT}`,
    customerId,
    after ?? '',
    limit,
  );
}

/** A recipient's unsubscribe: suppressed for its customer and `recipient.unsubscribed`, in one transaction; once only (store.ts). */
export function unsubscribe(db: Db, recipientId: number, method: UnsubscribeMethod, now: number): UnsubscribeResult {
  return db.tx(() => {
    const r = db.get<{
      customer_id: number;
      address: string;
      id: number;
      message_id: string;
      header_message_id: string | null;
    }>(
      `SELECT r.customer_id, r.address, m.id, m.message_id, m.header_message_id FROM recipients r
         JOIN messages m ON m.id = r.message_id WHERE r.id = ?`,
      recipientId,
    );
    if (!r) return 'unknown';
    const added = addSuppression(db, {
      customerId: r.customer_id,
      address: r.address,
      reason: 'unsubscribe',
      messageRowId: r.id,
      now,
    });
    if (!added) return 'already';
    const m = { id: r.id, messageId: r.message_id, headerMessageId: r.header_message_id };
    recordEvent(db, {
      customerId: r.customer_id,
      type: 'recipient.unsubscribed',
      data: unsubscribedEventData(m, r.address, method, now),
      messageRowId: r.id,
      recipientId,
      now,
    });
    return 'unsubscribed';
  });
}

export function sqliteSuppressions(db: Db): SuppressionStore {
  return {
    find: async (customerId, addresses) => findSuppressed(db, customerId, addresses),
    addMany: async (customerId, entries, now) => addSuppressions(db, customerId, entries, now),
    page: async (customerId, after, limit) => suppressionPage(db, customerId, after, limit),
    add: async (input) => addSuppression(db, input),
    list: async (customerId, opts) => listSuppressions(db, customerId, opts),
    remove: async (customerId, address) => removeSuppression(db, customerId, address),
    search: async (customerId, prefix, limit) => searchSuppressions(db, customerId, prefix, limit),
    simulated: async (customerId, addresses, limit) => simulatedSuppressions(db, customerId, addresses, limit),
    unsubscribe: async (recipientId, method, now) => unsubscribe(db, recipientId, method, now),
  };
}
