import { dkimKeyPair, newDomainSecrets, nextSelector } from '../credentials.js';
import type { ReceivingDomain } from '../model.js';
import {
  type DomainEventType,
  type DomainRow,
  type SendingDomain,
  type VerificationInput,
  verificationEvent,
} from '../model.js';
import type { DomainStore } from '../store.js';
import { RECEIVING_DOMAIN_COLUMNS, type ReceivingDomainRow, receivingDomainView } from '../views.js';
import type { Db } from './db.js';
import { recordEvent } from './events.js';

/** Adds a domain with a fresh 2048-bit RSA DKIM key and a verification token. */
export function addDomain(
  db: Db,
  input: { customerId: number; name: string; receiving: boolean; now: number },
): DomainRow {
  const d = newDomainSecrets();
  return db.get<DomainRow>(
    `INSERT INTO domains (customer_id, name, receiving, verified_at, verification_token, dkim_selector, dkim_private_key, dkim_public_key, created_at)
     VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?) RETURNING *`,
    input.customerId,
    input.name,
    input.receiving ? 1 : 0,
    d.verificationToken,
    d.selector,
    d.privateKey,
    d.publicKey,
    input.now,
  )!;
}

export function findDomain(db: Db, name: string): DomainRow | undefined {
  return db.get<DomainRow>('SELECT * FROM domains WHERE name = ?', name);
}

/** The columns the accept path needs (not the DKIM key), on a cached statement. */
export function findSendingDomain(db: Db, name: string): SendingDomain | undefined {
  return db.get<SendingDomain>('SELECT id, customer_id, name, verified_at FROM domains WHERE name = ?', name);
}

export function listDomains(db: Db, customerId?: number): DomainRow[] {
  return customerId === undefined
    ? db.all<DomainRow>('SELECT * FROM domains ORDER BY name')
    : db.all<DomainRow>('SELECT * FROM domains WHERE customer_id = ? ORDER BY name', customerId);
}

export function setVerified(db: Db, id: number, at: number | null): void {
  db.run('UPDATE domains SET verified_at = ? WHERE id = ?', at, id);
}

/** A verification's outcome and, when the verified state changed, its event, in one transaction. */
export function setVerification(db: Db, id: number, input: VerificationInput): DomainEventType | null {
  return db.tx(() => {
    const d = db.get<{ customer_id: number; name: string; verified_at: number | null }>(
      'SELECT customer_id, name, verified_at FROM domains WHERE id = ?',
      id,
    );
    const change = d && verificationEvent(d, input);
    if (!d || !change) return null;
    db.run('UPDATE domains SET verified_at = ? WHERE id = ?', change.at, id);
    recordEvent(db, { customerId: d.customer_id, type: change.type, data: change.data, now: input.now });
    return change.type;
  });
}

export function setReturnPath(db: Db, id: number, host: string | null): void {
  db.run('UPDATE domains SET return_path_host = ? WHERE id = ?', host, id);
}

/** Turns receiving on or off for a domain (the inbound listener accepts mail for it while on). */
export function setReceiving(db: Db, id: number, on: boolean): void {
  db.run('UPDATE domains SET receiving = ? WHERE id = ?', on ? 1 : 0, id);
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
  const d = db.get<{ dkim_selector: string; previous_dkim_selector: string | null }>(
    'SELECT dkim_selector, previous_dkim_selector FROM domains WHERE id = ?',
    id,
  )!;
  const selector = nextSelector(d, now);
  const { privateKey, publicKey } = dkimKeyPair();
  db.run(
    'UPDATE domains SET next_dkim_selector = ?, next_dkim_private_key = ?, next_dkim_public_key = ? WHERE id = ?',
    selector,
    privateKey,
    publicKey,
    id,
  );
  return db.get<DomainRow>('SELECT * FROM domains WHERE id = ?', id)!;
}

/** Signing moves to the next key: the current one becomes the previous (its record still needed for a while). */
export function switchDkim(db: Db, id: number, now: number): void {
  db.run(
    `UPDATE domains SET previous_dkim_selector = dkim_selector, previous_dkim_public_key = dkim_public_key,
       dkim_selector = next_dkim_selector, dkim_private_key = next_dkim_private_key, dkim_public_key = next_dkim_public_key,
       next_dkim_selector = NULL, next_dkim_private_key = NULL, next_dkim_public_key = NULL, dkim_switched_at = ?
     WHERE id = ? AND next_dkim_selector IS NOT NULL`,
    now,
    id,
  );
}

export function receivingDomain(db: Db, name: string): ReceivingDomain | undefined {
  const r = db.get<ReceivingDomainRow>(
    `SELECT ${RECEIVING_DOMAIN_COLUMNS} FROM domains WHERE name = ? AND receiving = 1`,
    name,
  );
  return r && receivingDomainView(r);
}

/** A domain's own inbound limits (null: the server's default). */
export function inboundLimitsOf(
  db: Db,
  domainId: number,
): { ratePerMinute: number | null; monthlyLimit: number | null } {
  const r = db.get<{ inbound_rate_per_minute: number | null; inbound_monthly_limit: number | null }>(
    'SELECT inbound_rate_per_minute, inbound_monthly_limit FROM domains WHERE id = ?',
    domainId,
  );
  return { ratePerMinute: r?.inbound_rate_per_minute ?? null, monthlyLimit: r?.inbound_monthly_limit ?? null };
}

export function setInboundLimits(
  db: Db,
  domainId: number,
  limits: { ratePerMinute?: number | null; monthlyLimit?: number | null },
): void {
  if (limits.ratePerMinute !== undefined)
    db.run('UPDATE domains SET inbound_rate_per_minute = ? WHERE id = ?', limits.ratePerMinute, domainId);
  if (limits.monthlyLimit !== undefined)
    db.run('UPDATE domains SET inbound_monthly_limit = ? WHERE id = ?', limits.monthlyLimit, domainId);
}

export function sqliteDomains(db: Db): DomainStore {
  return {
    add: async (input) => addDomain(db, input),
    find: async (name) => findDomain(db, name),
    findSending: async (name) => findSendingDomain(db, name),
    list: async (customerId) => listDomains(db, customerId),
    setVerified: async (id, at) => setVerified(db, id, at),
    setVerification: async (id, input) => setVerification(db, id, input),
    setReturnPath: async (id, host) => setReturnPath(db, id, host),
    setReceiving: async (id, on) => setReceiving(db, id, on),
    remove: async (id) => removeDomain(db, id),
    rotateDkim: async (id, now) => rotateDkim(db, id, now),
    switchDkim: async (id, now) => switchDkim(db, id, now),
    receiving: async (name) => receivingDomain(db, name),
    inboundLimits: async (id) => inboundLimitsOf(db, id),
    setInboundLimits: async (id, limits) => setInboundLimits(db, id, limits),
  };
}
