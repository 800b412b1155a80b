import { createHash, generateKeyPairSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { type KeyGrant, restrictionOf, scopesOf, scopesText } from '../domain/key-scopes.js';
import { randomBase62 } from '../lib/ids.js';
import { type ApiKeyInfo, DKIM_SELECTOR, type KeyKind } from './model.js';

/**
 * What both engines make and check the same way, with no SQL: API keys (their format, hash and
 * constant-time check, and the view of a new one), a new domain's DKIM key pair and verification
 * token, selectors, dashboard session ids.
 */

const PREFIX: Record<KeyKind, string> = { production: 'ph_live_', sandbox: 'ph_test_' };
/** ph_live_/ph_test_ + at least 32 base62 chars; the first 12 of them are the public handle. */
const KEY_FORMAT = /^ph_(live|test)_([0-9A-Za-z]{32,128})$/;

const SECRET_LENGTH = 40;
const HANDLE_LENGTH = 12;

export const KEY_COLUMNS =
  'id, customer_id, name, kind, created_at, revoked_at, last_used_at, scopes, from_domains, allowed_cidrs';

/** A row of api_keys as both engines read it: scopes and restrictions as stored text. */
export type KeyRow = Omit<ApiKeyInfo, keyof KeyGrant> & {
  scopes: string;
  from_domains: string | null;
  allowed_cidrs: string | null;
};

/** A key's row made its info: scopes and restrictions read from their text (domain/key-scopes.ts). */
export function keyInfoOf(row: KeyRow): ApiKeyInfo {
  return {
    ...row,
    scopes: scopesOf(row.scopes),
    from_domains: restrictionOf(row.from_domains),
    allowed_cidrs: restrictionOf(row.allowed_cidrs),
  };
}

/** A grant as its columns store it (the order of the INSERT's last three values). */
export function grantColumns(g: KeyGrant): [string, string | null, string | null] {
  return [scopesText(g.scopes), g.from_domains?.join(' ') ?? null, g.allowed_cidrs?.join(' ') ?? null];
}

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
export function checkKey(
  presented: string,
  live: boolean,
  row: (KeyRow & { hash: Uint8Array }) | undefined,
): ApiKeyInfo | undefined {
  const expected = row?.hash ?? Buffer.alloc(32);
  const ok = timingSafeEqual(hashKey(presented), expected) && row !== undefined;
  if (!ok || row.revoked_at !== null) return undefined;
  if (live !== (row.kind === 'production')) return undefined;
  const { hash: _hash, ...info } = row;
  return keyInfoOf(info);
}

/** A fresh 2048-bit RSA key pair: PKCS#8 PEM, and Base64 SPKI DER as published in p=. */
export function dkimKeyPair(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
}

/** The next key's selector: "posthaste" and the date, with a letter when that is taken. */
export function nextSelector(d: { dkim_selector: string; previous_dkim_selector: string | null }, now: number): string {
  const day = new Date(now).toISOString().slice(0, 10).replace(/-/g, '');
  const taken = new Set([d.dkim_selector, d.previous_dkim_selector]);
  let selector = `${DKIM_SELECTOR}${day}`;
  for (let i = 0; taken.has(selector); i++) selector = `${DKIM_SELECTOR}${day}${String.fromCharCode(97 + i)}`;
  return selector;
}

export const hashId = (id: string) => createHash('sha256').update(id).digest();

/** A new session: its id (for the cookie, never stored) and CSRF token. */
export function newSession(): { id: string; csrf: string } {
  return { id: randomBytes(32).toString('base64url'), csrf: randomBytes(32).toString('base64url') };
}

/** A key just made, as its creator sees it once: its row's view and the key itself. */
export function createdKey(
  made: { id: string; key: string },
  input: { customerId: number; kind: KeyKind; name: string; grant: KeyGrant; now: number },
): ApiKeyInfo & { key: string } {
  return {
    id: made.id,
    customer_id: input.customerId,
    name: input.name,
    kind: input.kind,
    created_at: input.now,
    revoked_at: null,
    last_used_at: null,
    ...input.grant,
    key: made.key,
  };
}

/** What a new domain is made with: its verification token, its DKIM selector and key pair. */
export function newDomainSecrets(): {
  verificationToken: string;
  selector: string;
  privateKey: string;
  publicKey: string;
} {
  return { verificationToken: randomBytes(16).toString('hex'), selector: DKIM_SELECTOR, ...dkimKeyPair() };
}
