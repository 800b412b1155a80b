import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Db } from './db.js';

/** A row of domains (the columns' meaning: migrations 001, 003 and 007). */
export interface DomainRow {
  id: number;
  customer_id: number;
  name: string;
  verified_at: number | null;
  /** 1 while the inbound listener accepts mail for it. */
  receiving: number;
  verification_token: string;
  dkim_selector: string;
  dkim_private_key: string;
  dkim_public_key: string;
  /** A key made by rotate-dkim, waiting for its record to be found in DNS; null: none. */
  next_dkim_selector: string | null;
  next_dkim_private_key: string | null;
  next_dkim_public_key: string | null;
  /** The selector signed with before the last switch, and when the switch was. */
  previous_dkim_selector: string | null;
  previous_dkim_public_key: string | null;
  dkim_switched_at: number | null;
  /** The domain's own inbound limits; null: the server's. */
  inbound_rate_per_minute: number | null;
  inbound_monthly_limit: number | null;
  created_at: number;
}
export const DKIM_SELECTOR = 'posthaste';

/** A fresh 2048-bit RSA key pair: PKCS#8 PEM, and Base64 SPKI DER as published in p=. */
export function dkimKeyPair(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') };
}

/** Adds a domain with a fresh 2048-bit RSA DKIM key and a verification token. */
export function addDomain(db: Db, input: { customerId: number; name: string; receiving: boolean; now: number }): DomainRow {
  const { privateKey, publicKey } = dkimKeyPair();
  return db.get<DomainRow>(
    `INSERT INTO domains (customer_id, name, receiving, verified_at, verification_token, dkim_selector, dkim_private_key, dkim_public_key, created_at)
     VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?) RETURNING *`,
    input.customerId,
    input.name,
    input.receiving ? 1 : 0,
    randomBytes(16).toString('hex'),
    DKIM_SELECTOR,
    privateKey,
    publicKey,
    input.now,
  )!;
}

export function findDomain(db: Db, name: string): DomainRow | undefined {
  return db.get<DomainRow>('SELECT * FROM domains WHERE name = ?', name);
}

export type SendingDomain = Pick<DomainRow, 'id' | 'customer_id' | 'name' | 'verified_at'>;

/** The columns the accept path needs (not the DKIM key), on a cached statement. */
export function findSendingDomain(db: Db, name: string): SendingDomain | undefined {
  return db.statement('SELECT id, customer_id, name, verified_at FROM domains WHERE name = ?').get(name) as SendingDomain | undefined;
}

export function listDomains(db: Db, customerId?: number): DomainRow[] {
  return customerId === undefined ? db.all<DomainRow>('SELECT * FROM domains ORDER BY name') : db.all<DomainRow>('SELECT * FROM domains WHERE customer_id = ? ORDER BY name', customerId);
}

export function setVerified(db: Db, id: number, at: number | null): void {
  db.run('UPDATE domains SET verified_at = ? WHERE id = ?', at, id);
}

/** Turns receiving on or off for a domain (the inbound listener accepts mail for it while on). */
export function setReceiving(db: Db, id: number, on: boolean): void {
  db.statement('UPDATE domains SET receiving = ? WHERE id = ?').run(on ? 1 : 0, id);
}

export function removeDomain(db: Db, id: number): void {
  db.run('DELETE FROM domains WHERE id = ?', id);
}

/**
 * Makes the domain's next DKIM key under a new selector ("posthaste" and the date, with a
 * letter when that is taken), replacing a next key not yet switched to. It does not sign until
 * switchDkim, once its record is found in DNS.
 */
export function rotateDkim(db: Db, id: number, now: number): DomainRow {
  const d = db.statement('SELECT dkim_selector, previous_dkim_selector FROM domains WHERE id = ?').get(id) as { dkim_selector: string; previous_dkim_selector: string | null };
  const selector = nextSelector(d, now);
  const { privateKey, publicKey } = dkimKeyPair();
  db.statement('UPDATE domains SET next_dkim_selector = ?, next_dkim_private_key = ?, next_dkim_public_key = ? WHERE id = ?').run(selector, privateKey, publicKey, id);
  return db.statement('SELECT * FROM domains WHERE id = ?').get(id) as DomainRow;
}

/** The next key's selector: "posthaste" and the date, with a letter when that is taken. */
export function nextSelector(d: { dkim_selector: string; previous_dkim_selector: string | null }, now: number): string {
  const day = new Date(now).toISOString().slice(0, 10).replace(/-/g, '');
  const taken = new Set([d.dkim_selector, d.previous_dkim_selector]);
  let selector = `${DKIM_SELECTOR}${day}`;
  for (let i = 0; taken.has(selector); i++) selector = `${DKIM_SELECTOR}${day}${String.fromCharCode(97 + i)}`;
  return selector;
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
