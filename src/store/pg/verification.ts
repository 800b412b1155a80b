import type { DomainEventType, VerificationInput } from '../model.js';
import { verificationEvent } from '../model.js';
import type { PgDb } from './db.js';
import { insertEvents } from './transitions.js';

/** A verification's outcome and, when the verified state changed, its event, in one transaction (as on SQLite). */
export function setVerification(db: PgDb, id: number, input: VerificationInput): Promise<DomainEventType | null> {
  return db.tx(async (q) => {
    const d = await q.row<{ customer_id: number; name: string; verified_at: number | null }>(
      'SELECT customer_id, name, verified_at FROM domains WHERE id = $1 FOR UPDATE',
      [id],
    );
    const change = d && verificationEvent(d, input);
    if (!d || !change) return null;
    await q.run('UPDATE domains SET verified_at = $1 WHERE id = $2', [change.at, id]);
    await insertEvents(
      q,
      [{ customerId: d.customer_id, type: change.type, data: change.data, messageRowId: null, recipientId: null }],
      input.now,
    );
    return change.type;
  });
}
