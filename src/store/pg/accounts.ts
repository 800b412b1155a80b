import { addressKey, suppressedBy, suppressionKeys } from '../../domain/addresses.js';
import {
  checkKey,
  createdKey,
  dkimKeyPair,
  grantColumns,
  KEY_COLUMNS,
  type KeyRow,
  keyHandle,
  keyInfoOf,
  newDomainSecrets,
  newKey,
  nextSelector,
} from '../credentials.js';
import type { ReceivingDomain, SimulatedSuppression, SuppressionReason, SuppressionRow } from '../model.js';
import { type Customer, DEFAULT_CUSTOMER, type DomainRow, type SendingDomain } from '../model.js';
import type { CustomerStore, DomainStore, KeyStore, SuppressionStore } from '../store.js';
import type { PgDb } from './db.js';
import { pgCustomerPools } from './pools.js';
import { pgQuotas } from './quotas.js';
import { pgSuppressionBulk } from './suppressions.js';
import { unsubscribe, unsubscribeDefaults } from './unsubscribe.js';
import { setVerification } from './verification.js';

/** Customers, API keys, domains and suppressions on PostgreSQL: one statement each, as on SQLite (users.ts the dashboard's users). */

export function pgCustomers(db: PgDb): CustomerStore {
  return {
    ensureDefault: async (now) =>
      void (await db.run('INSERT INTO customers (name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
        DEFAULT_CUSTOMER,
        now,
      ])),
    add: async (name, now) =>
      (await db.row<Customer>(
        'INSERT INTO customers (name, created_at) VALUES ($1, $2) RETURNING id, name, created_at',
        [name, now],
      ))!,
    find: (name) => db.row<Customer>('SELECT id, name, created_at FROM customers WHERE name = $1', [name]),
    byId: (id) => db.row<Customer>('SELECT id, name, created_at FROM customers WHERE id = $1', [id]),
    list: () => db.rows<Customer>('SELECT id, name, created_at FROM customers ORDER BY id'),
    counts: async (id) =>
      (await db.row<{ keys: number; domains: number; messages: number }>(
        `SELECT (SELECT count(*) FROM api_keys WHERE customer_id = $1)::int AS keys, (SELECT count(*) FROM domains WHERE customer_id = $1)::int AS domains,
                (SELECT count(*) FROM messages WHERE customer_id = $1)::int AS messages`,
        [id],
      ))!,
    ...pgQuotas(db),
    ...pgCustomerPools(db),
    ...unsubscribeDefaults(db),
  };
}

export function pgKeys(db: PgDb): KeyStore {
  return {
    create: async (input) => {
      const { key, id, hash } = newKey(input.kind);
      await db.run(
        `INSERT INTO api_keys (id, customer_id, name, kind, hash, created_at, revoked_at, scopes, from_domains, allowed_cidrs)
         VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9)`,
        [id, input.customerId, input.name, input.kind, hash, input.now, ...grantColumns(input.grant)],
      );
      return createdKey({ id, key }, input);
    },
    authenticate: async (presented) => {
      const h = keyHandle(presented);
      if (!h) return undefined;
      return checkKey(
        presented,
        h.live,
        await db.row<KeyRow & { hash: Buffer }>(`SELECT ${KEY_COLUMNS}, hash FROM api_keys WHERE id = $1`, [h.id]),
      );
    },
    list: async (customerId) =>
      (customerId === undefined
        ? await db.rows<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at`)
        : await db.rows<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE customer_id = $1 ORDER BY created_at`, [
            customerId,
          ])
      ).map(keyInfoOf),
    get: async (id, customerId) => {
      const row = await db.row<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND customer_id = $2`, [
        id,
        customerId,
      ]);
      return row && keyInfoOf(row);
    },
    revoke: async (id, now) => {
      if ((await db.run('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, id])) > 0)
        return true;
      return (await db.row('SELECT id FROM api_keys WHERE id = $1', [id])) !== undefined;
    },
    authEpoch: async () =>
      (await db.row<{ value: string }>("SELECT value FROM settings WHERE name = 'auth_epoch'"))?.value ?? '',
  };
}

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
  const r = await db.row<{
    id: number;
    customer_id: number;
    name: string;
    inbound_rate_per_minute: number | null;
    inbound_monthly_limit: number | null;
  }>(
    'SELECT id, customer_id, name, inbound_rate_per_minute, inbound_monthly_limit FROM domains WHERE name = $1 AND receiving = 1',
    [name],
  );
  return (
    r &&
    ({
      id: r.id,
      customerId: r.customer_id,
      name: r.name,
      ratePerMinute: r.inbound_rate_per_minute,
      monthlyLimit: r.inbound_monthly_limit,
    } satisfies ReceivingDomain)
  );
}

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
  return rows.map((r) => ({
    address: r.address,
    message_id: r.message_id,
    created_at: r.created_at,
    reason: (JSON.parse(r.body) as { data: { reason: SuppressionReason } }).data.reason,
  }));
}
