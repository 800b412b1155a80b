import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Db } from './db.js';
import type { DomainsTable } from './tables.js';
import type { Selectable } from 'kysely';

export type DomainRow = Selectable<DomainsTable>;
export const DKIM_SELECTOR = 'posthaste';

/** A fresh 2048-bit RSA key pair: PKCS#8 PEM, and Base64 SPKI DER as published in p=. */
function dkimKeyPair(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') };
}

/** Adds a domain with a fresh 2048-bit RSA DKIM key and a verification token. */
export function addDomain(db: Db, input: { customerId: number; name: string; receiving: boolean; now: number }): DomainRow {
  const { privateKey, publicKey } = dkimKeyPair();
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
        dkim_private_key: privateKey,
        dkim_public_key: publicKey,
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

/** Turns receiving on or off for a domain (the inbound listener accepts mail for it while on). */
export function setReceiving(db: Db, id: number, on: boolean): void {
  db.statement('UPDATE domains SET receiving = ? WHERE id = ?').run(on ? 1 : 0, id);
}

export function removeDomain(db: Db, id: number): void {
  db.run(db.q.deleteFrom('domains').where('id', '=', id));
}

/**
 * Makes the domain's next DKIM key under a new selector ("posthaste" and the date, with a
 * letter when that is taken), replacing a next key not yet switched to. It does not sign until
 * switchDkim, once its record is found in DNS.
 */
export function rotateDkim(db: Db, id: number, now: number): DomainRow {
  const d = db.statement('SELECT dkim_selector, previous_dkim_selector FROM domains WHERE id = ?').get(id) as { dkim_selector: string; previous_dkim_selector: string | null };
  const day = new Date(now).toISOString().slice(0, 10).replace(/-/g, '');
  const taken = new Set([d.dkim_selector, d.previous_dkim_selector]);
  let selector = `${DKIM_SELECTOR}${day}`;
  for (let i = 0; taken.has(selector); i++) selector = `${DKIM_SELECTOR}${day}${String.fromCharCode(97 + i)}`;
  const { privateKey, publicKey } = dkimKeyPair();
  db.statement('UPDATE domains SET next_dkim_selector = ?, next_dkim_private_key = ?, next_dkim_public_key = ? WHERE id = ?').run(selector, privateKey, publicKey, id);
  return db.statement('SELECT * FROM domains WHERE id = ?').get(id) as DomainRow;
}

/** Signing moves to the next key: the current one becomes the previous (its record still needed for a while). */
export function switchDkim(db: Db, id: number, now: number): void {
  db.statement(
    `UPDATE domains SET previous_dkim_selector = dkim_selector, previous_dkim_public_key = dkim_public_key,
       dkim_selector = next_dkim_selector, dkim_private_key = next_dkim_private_key, dkim_public_key = next_dkim_public_key,
       next_dkim_selector = NULL, next_dkim_private_key = NULL, next_dkim_public_key = NULL, dkim_switched_at = ?
     WHERE id = ? AND next_dkim_selector IS NOT NULL`,
  ).run(now, id);
}
