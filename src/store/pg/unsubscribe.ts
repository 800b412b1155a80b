import { addressKey } from '../../domain/addresses.js';
import { type UnsubscribeMethod, type UnsubscribeResult, unsubscribedEventData } from '../../domain/unsubscribe.js';
import type { CustomerStore } from '../store.js';
import type { PgDb } from './db.js';
import { insertEvents } from './transitions.js';

/** A customer's default for the List-Unsubscribe fields (`customers set --unsubscribe`). */
export function unsubscribeDefaults(db: PgDb): Pick<CustomerStore, 'unsubscribeDefault' | 'setUnsubscribeDefault'> {
  return {
    unsubscribeDefault: async (id) =>
      (await db.row<{ unsubscribe: number }>('SELECT unsubscribe FROM customers WHERE id = $1', [id]))?.unsubscribe ===
      1,
    setUnsubscribeDefault: async (id, on) =>
      void (await db.run('UPDATE customers SET unsubscribe = $2 WHERE id = $1', [id, on ? 1 : 0])),
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
