import { createHash, timingSafeEqual } from 'node:crypto';
import type { Db } from './db.js';
import { randomBase62 } from '../lib/ids.js';

export type KeyKind = 'production' | 'sandbox';
const PREFIX: Record<KeyKind, string> = { production: 'ph_live_', sandbox: 'ph_test_' };
/** ph_live_/ph_test_ + at least 32 base62 chars; the first 12 of them are the public handle. */
const KEY_FORMAT = /^ph_(live|test)_([0-9A-Za-z]{32,128})$/;
const SECRET_LENGTH = 40;
const HANDLE_LENGTH = 12;

/** A row of api_keys without its hash (the hash never leaves the store). */
export interface ApiKeyInfo {
  id: string;
  customer_id: number;
  name: string;
  kind: KeyKind;
  created_at: number;
  revoked_at: number | null;
  /** When a message was last sent with it. */
  last_used_at?: number | null;
}

export const KEY_COLUMNS = 'id, customer_id, name, kind, created_at, revoked_at, last_used_at';

export function hashKey(key: string): Buffer {
  // Keys carry ~238 random bits, so a fast hash is enough (no password stretching needed).
  return createHash('sha256').update(key).digest();
}

/** A new key of this kind: the key (shown once), its public handle, its hash. */
export function newKey(kind: KeyKind): { key: string; id: string; hash: Buffer } {
  const random = randomBase62(SECRET_LENGTH);
  const key = PREFIX[kind] + random;
  return { key, id: 'key_' + random.slice(0, HANDLE_LENGTH), hash: hashKey(key) };
}

/** The handle a presented key is looked up by, or undefined when it is not a key's shape. */
export function keyHandle(presented: string): { id: string; live: boolean } | undefined {
  const m = KEY_FORMAT.exec(presented);
  return m ? { id: 'key_' + m[2]!.slice(0, HANDLE_LENGTH), live: m[1] === 'live' } : undefined;
}

/** The presented key checked against its row (constant-time compare even when there is none); the row without its hash. */
export function checkKey(presented: string, live: boolean, row: (ApiKeyInfo & { hash: Uint8Array }) | undefined): ApiKeyInfo | undefined {
  const expected = row?.hash ?? Buffer.alloc(32);
  const ok = timingSafeEqual(hashKey(presented), expected) && row !== undefined;
  if (!ok || row.revoked_at !== null) return undefined;
  if (live !== (row.kind === 'production')) return undefined;
  const { hash: _hash, ...info } = row;
  return info;
}

export function createKey(db: Db, input: { customerId: number; kind: KeyKind; name: string; now: number }): ApiKeyInfo & { key: string } {
  const { key, id, hash } = newKey(input.kind);
  db.run('INSERT INTO api_keys (id, customer_id, name, kind, hash, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, NULL)', id, input.customerId, input.name, input.kind, hash, input.now);
  return { id, customer_id: input.customerId, name: input.name, kind: input.kind, created_at: input.now, revoked_at: null, key };
}

/**
 * The key's row if the presented key is well-formed, known and not revoked; undefined otherwise.
 * Looked up by its public handle, then compared by hash in constant time.
 */
export function authenticate(db: Db, presented: string): ApiKeyInfo | undefined {
  const h = keyHandle(presented);
  if (!h) return undefined;
  return checkKey(presented, h.live, db.statement('SELECT * FROM api_keys WHERE id = ?').get(h.id) as (ApiKeyInfo & { hash: Buffer }) | undefined);
}

/** Whether the key exists and is not revoked (the writer's check when the auth epoch moved). */
export function isKeyLive(db: Db, id: string): boolean {
  const key = db.statement('SELECT revoked_at FROM api_keys WHERE id = ?').get(id) as { revoked_at: number | null } | undefined;
  return key !== undefined && key.revoked_at === null;
}

export function listKeys(db: Db, customerId?: number): ApiKeyInfo[] {
  return customerId === undefined
    ? db.all<ApiKeyInfo>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at`)
    : db.all<ApiKeyInfo>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE customer_id = ? ORDER BY created_at`, customerId);
}

/** Revokes; returns false if there is no such key. Takes effect on the next request: the trigger on api_keys moves auth_epoch, which drops every cached key (store/auth-cache.ts). */
export function revokeKey(db: Db, id: string, now: number): boolean {
  const r = db.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', now, id);
  if (r.changes > 0) return true;
  return db.get<{ id: string }>('SELECT id FROM api_keys WHERE id = ?', id) !== undefined;
}

/** One key by its public handle, if it is this customer's. */
export function getKey(db: Db, id: string, customerId: number): ApiKeyInfo | undefined {
  return db.get<ApiKeyInfo>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ? AND customer_id = ?`, id, customerId);
}

/** `auth_epoch` moves (by trigger) on every change to api_keys or domains, from any connection. */
export function readAuthEpoch(db: Db): string {
  return (db.statement("SELECT value FROM settings WHERE name = 'auth_epoch'").get() as { value: string } | undefined)?.value ?? '';
}
