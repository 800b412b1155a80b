import type { KeyGrant } from '../../domain/key-scopes.js';
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
import type { ApiKeyInfo, KeyKind } from '../model.js';
import type { KeyStore } from '../store.js';
import type { Db } from './db.js';

export function createKey(
  db: Db,
  input: { customerId: number; kind: KeyKind; name: string; grant: KeyGrant; now: number },
): ApiKeyInfo & { key: string } {
  const { key, id, hash } = newKey(input.kind);
  db.run(
    `INSERT INTO api_keys (id, customer_id, name, kind, hash, created_at, revoked_at, scopes, from_domains, allowed_cidrs)
     VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`,
    id,
    input.customerId,
    input.name,
    input.kind,
    hash,
    input.now,
    ...grantColumns(input.grant),
  );
  return createdKey({ id, key }, input);
}

/**
 * The key's row if the presented key is well-formed, known and not revoked; undefined otherwise.
 * Looked up by its public handle, then compared by hash in constant time.
 */
export function authenticate(db: Db, presented: string): ApiKeyInfo | undefined {
  const h = keyHandle(presented);
  if (!h) return undefined;
  return checkKey(
    presented,
    h.live,
    db.get<KeyRow & { hash: Buffer }>(`SELECT ${KEY_COLUMNS}, hash FROM api_keys WHERE id = ?`, h.id),
  );
}

/** Whether the key exists and is not revoked (the writer's check when the auth epoch moved). */
export function isKeyLive(db: Db, id: string): boolean {
  const key = db.get<{ revoked_at: number | null }>('SELECT revoked_at FROM api_keys WHERE id = ?', id);
  return key !== undefined && key.revoked_at === null;
}

export function listKeys(db: Db, customerId?: number): ApiKeyInfo[] {
  const rows =
    customerId === undefined
      ? db.all<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at`)
      : db.all<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE customer_id = ? ORDER BY created_at`, customerId);
  return rows.map(keyInfoOf);
}

/** Revokes; returns false if there is no such key. Takes effect on the next request: the trigger on api_keys moves auth_epoch, which drops every cached key (store/auth-cache.ts). */
export function revokeKey(db: Db, id: string, now: number): boolean {
  const r = db.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', now, id);
  if (r.changes > 0) return true;
  return db.get<{ id: string }>('SELECT id FROM api_keys WHERE id = ?', id) !== undefined;
}

/** One key by its public handle, if it is this customer's. */
export function getKey(db: Db, id: string, customerId: number): ApiKeyInfo | undefined {
  const row = db.get<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ? AND customer_id = ?`, id, customerId);
  return row && keyInfoOf(row);
}

/** `auth_epoch` moves (by trigger) on every change to api_keys or domains, from any connection. */
export function readAuthEpoch(db: Db): string {
  return db.get<{ value: string }>("SELECT value FROM settings WHERE name = 'auth_epoch'")?.value ?? '';
}

export function sqliteKeys(db: Db): KeyStore {
  return {
    create: async (input) => createKey(db, input),
    authenticate: async (presented) => authenticate(db, presented),
    list: async (customerId) => listKeys(db, customerId),
    get: async (id, customerId) => getKey(db, id, customerId),
    revoke: async (id, now) => revokeKey(db, id, now),
    authEpoch: async () => readAuthEpoch(db),
  };
}
