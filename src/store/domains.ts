import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Db } from './db.js';
import type { DomainsTable } from './tables.js';
import type { Selectable } from 'kysely';

export type DomainRow = Selectable<DomainsTable>;
export const DKIM_SELECTOR = 'posthaste';

/** Adds a domain with a fresh 2048-bit RSA DKIM key and a verification token. */
export function addDomain(db: Db, input: { customerId: number; name: string; receiving: boolean; now: number }): DomainRow {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return db.get(
    db.q
      .insertInto('domains')
      .values({
        customer_id: input.customerId,
        name: input.name,
        receiving: input.receiving ? 1 : 0,
        verified_at: null,
        verification_token: randomBytes(16).toString('hex'),
        dkim_selector: DKIM_SELECTOR,
        dkim_private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        dkim_public_key: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
        created_at: input.now,
      })
      .returningAll(),
  )!;
}

export function findDomain(db: Db, name: string): DomainRow | undefined {
  return db.get(db.q.selectFrom('domains').selectAll().where('name', '=', name));
}

export type SendingDomain = Pick<DomainRow, 'id' | 'customer_id' | 'name' | 'verified_at'>;

/** The columns the accept path needs (not the DKIM key), on a cached statement. */
export function findSendingDomain(db: Db, name: string): SendingDomain | undefined {
  return db.statement('SELECT id, customer_id, name, verified_at FROM domains WHERE name = ?').get(name) as SendingDomain | undefined;
}

export function listDomains(db: Db, customerId?: number): DomainRow[] {
  let q = db.q.selectFrom('domains').selectAll().orderBy('name');
  if (customerId !== undefined) q = q.where('customer_id', '=', customerId);
  return db.all(q);
}

export function setVerified(db: Db, id: number, at: number | null): void {
  db.run(db.q.updateTable('domains').set({ verified_at: at }).where('id', '=', id));
}

export function removeDomain(db: Db, id: number): void {
  db.run(db.q.deleteFrom('domains').where('id', '=', id));
}
