import { createHmac, timingSafeEqual } from 'node:crypto';

// Per-recipient return path (VERP): bounces+<token>@<return_path_domain>. The token is the
// recipient row id (8 base32 chars, fixed width) and a 60-bit HMAC of it (12 chars), all lower
// case so it survives a remote MTA folding the case of the local part (docs/protocols.md 2.1). Nothing
// is stored or indexed per recipient, and a token cannot be forged or guessed.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const ID_CHARS = 8;
const MAC_CHARS = 12;

function base32(n: bigint, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}

function mac(secret: Buffer, id: number): string {
  const digest = createHmac('sha256', secret).update(`rcpt:${id}`).digest();
  return base32(digest.readBigUInt64BE(0) >> 4n, MAC_CHARS);
}

export function returnToken(secret: Buffer, recipientId: number): string {
  return base32(BigInt(recipientId), ID_CHARS) + mac(secret, recipientId);
}

/** The recipient id a token names, or undefined if it is malformed or forged. */
export function parseReturnToken(secret: Buffer, token: string): number | undefined {
  const t = token.toLowerCase();
  if (t.length !== ID_CHARS + MAC_CHARS || ![...t].every((c) => ALPHABET.includes(c))) return undefined;
  let id = 0n;
  for (const c of t.slice(0, ID_CHARS)) id = (id << 5n) | BigInt(ALPHABET.indexOf(c));
  if (id === 0n || id > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  const expected = Buffer.from(mac(secret, Number(id)));
  const given = Buffer.from(t.slice(ID_CHARS));
  return timingSafeEqual(expected, given) ? Number(id) : undefined;
}

export function returnPath(secret: Buffer, recipientId: number, domain: string): string {
  return `bounces+${returnToken(secret, recipientId)}@${domain}`;
}

/** The token of a return path, when the address is bounces+<token>@… (angle brackets allowed). */
export function verpToken(address: string | null | undefined): string | undefined {
  const m = /^bounces\+([0-9a-z]+)@/i.exec(address?.trim().replace(/^<|>$/g, '') ?? '');
  return m ? m[1]!.toLowerCase() : undefined;
}
