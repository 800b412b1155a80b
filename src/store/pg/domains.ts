import { dkimKeyPair, newDomainSecrets, nextSelector } from '../credentials.js';
import type { DomainEventType, DomainRow, ReceivingDomain, SendingDomain, VerificationInput } from '../model.js';
import { verificationEvent } from '../model.js';
import type { DomainStore } from '../store.js';
import { RECEIVING_DOMAIN_COLUMNS, type ReceivingDomainRow, receivingDomainView } from '../views.js';
import type { PgDb } from './db.js';
import { insertEvents } from './transitions.js';

/** Sending and receiving domains on PostgreSQL, with their DKIM keys and inbound limits: one statement each, as on SQLite. */
export function pgDomains(db: PgDb): DomainStore {
  return {
    add: (input) => addDomain(db, input),
    find: (name) => db.row<DomainRow>('SELECT * FROM domains WHERE name = $1', [name]),
    findSending: (name) =>
      db.row<SendingDomain>('SELECT id, customer_id, name, verified_at FROM domains WHERE name = $1', [name]),
    list: (customerId) =>
      customerId === undefined
        ? db.rows<DomainRow>('SELECT * FROM domains ORDER BY name')
        : db.rows<DomainRow>('SELECT * FROM domains WHERE customer_id = $1 ORDER BY name', [customerId]),
    setVerified: async (id, at) => void (await db.run('UPDATE domains SET verified_at = $1 WHERE id = $2', [at, id])),
    setVerification: (id, input) => setVerification(db, id, input),
    setReturnPath: async (id, host) =>
      void (await db.run('UPDATE domains SET return_path_host = $1 WHERE id = $2', [host, id])),
    setReceiving: async (id, on) =>
      void (await db.run('UPDATE domains SET receiving = $1 WHERE id = $2', [on ? 1 : 0, id])),
    remove: async (id) => void (await db.run('DELETE FROM domains WHERE id = $1', [id])),
    rotateDkim: (id, now) => rotateDkim(db, id, now),
    switchDkim: async (id, now) =>
      void (await db.run(
        `UPDATE domains SET previous_dkim_selector = dkim_selector, previous_dkim_public_key = dkim_public_key,
           dkim_selector = next_dkim_selector, dkim_private_key = next_dkim_private_key, dkim_public_key = next_dkim_public_key,
           next_dkim_selector = NULL, next_dkim_private_key = NULL, next_dkim_public_key = NULL, dkim_switched_at = $1
         WHERE id = $2 AND next_dkim_selector IS NOT NULL`,
        [now, id],
      )),
    receiving: (name) => receivingDomain(db, name),
    inboundLimits: async (id) => {
      const r = await db.row<{ inbound_rate_per_minute: number | null; inbound_monthly_limit: number | null }>(
        'SELECT inbound_rate_per_minute, inbound_monthly_limit FROM domains WHERE id = $1',
        [id],
      );
      return { ratePerMinute: r?.inbound_rate_per_minute ?? null, monthlyLimit: r?.inbound_monthly_limit ?? null };
    },
    setInboundLimits: async (id, limits) => {
      if (limits.ratePerMinute !== undefined)
        await db.run('UPDATE domains SET inbound_rate_per_minute = $1 WHERE id = $2', [limits.ratePerMinute, id]);
      if (limits.monthlyLimit !== undefined)
        await db.run('UPDATE domains SET inbound_monthly_limit = $1 WHERE id = $2', [limits.monthlyLimit, id]);
    },
  };
}

/** A domain of a customer's, unverified, with a fresh DKIM key pair and verification token. */
async function addDomain(db: PgDb, input: Parameters<DomainStore['add']>[0]): Promise<DomainRow> {
  const d = newDomainSecrets();
  return (await db.row<DomainRow>(
    `INSERT INTO domains (customer_id, name, receiving, verified_at, verification_token, dkim_selector, dkim_private_key, dkim_public_key, created_at)
     VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8) RETURNING *`,
    [
      input.customerId,
      input.name,
      input.receiving ? 1 : 0,
      d.verificationToken,
      d.selector,
      d.privateKey,
      d.publicKey,
      input.now,
    ],
  ))!;
}

/** The next DKIM key, kept beside the current one until the switch. */
async function rotateDkim(db: PgDb, id: number, now: number): Promise<DomainRow> {
  const d = await db.row<{ dkim_selector: string; previous_dkim_selector: string | null }>(
    'SELECT dkim_selector, previous_dkim_selector FROM domains WHERE id = $1',
    [id],
  );
  const { privateKey, publicKey } = dkimKeyPair();
  return (await db.row<DomainRow>(
    'UPDATE domains SET next_dkim_selector = $1, next_dkim_private_key = $2, next_dkim_public_key = $3 WHERE id = $4 RETURNING *',
    [nextSelector(d!, now), privateKey, publicKey, id],
  ))!;
}

/** A domain that receives mail, with its inbound limits. */
async function receivingDomain(db: PgDb, name: string): Promise<ReceivingDomain | undefined> {
  const r = await db.row<ReceivingDomainRow>(
    `SELECT ${RECEIVING_DOMAIN_COLUMNS} FROM domains WHERE name = $1 AND receiving = 1`,
    [name],
  );
  return r && receivingDomainView(r);
}

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
