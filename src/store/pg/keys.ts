import {
  checkKey,
  createdKey,
  grantColumns,
  KEY_COLUMNS,
  type KeyRow,
  keyHandle,
  keyInfoOf,
  newKey,
} from '../credentials.js';
import type { KeyStore } from '../store.js';
import type { PgDb } from './db.js';

/** API keys on PostgreSQL: one statement each, as on SQLite. */
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
