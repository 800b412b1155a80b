import { randomBytes } from 'node:crypto';

// Alphabets in ASCII order, so fixed-width strings sort the way their numbers do.
export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const BASE32 = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford, lower case

function encodeBig(n: bigint, alphabet: string, width: number): string {
  const base = BigInt(alphabet.length);
  let out = '';
  for (let i = 0; i < width; i++) {
    out = alphabet[Number(n % base)] + out;
    n /= base;
  }
  return out;
}

/**
 * A time-sortable unique id: 48 bits of milliseconds then 80 random bits, fixed width in the
 * given alphabet (27 chars in base62, like KSUID; 26 in base32, like ULID).
 */
export function timeSortableId(nowMs: number, alphabet: string = BASE62): string {
  const rnd = randomPool(10);
  if (alphabet === BASE32) return base32Id(nowMs, rnd);
  return bigIntId(nowMs, rnd, alphabet);
}

/** The general encoding (any alphabet), through a 128-bit BigInt. */
export function bigIntId(nowMs: number, rnd: Uint8Array, alphabet: string): string {
  let n = BigInt(Math.floor(nowMs)) & 0xffffffffffffn;
  for (const b of rnd) n = (n << 8n) | BigInt(b);
  const width = alphabet.length === 62 ? 22 : 26; // ceil(128 / log2(alphabet))
  return encodeBig(n, alphabet, width);
}

/**
 * The same digits as bigIntId for base 32, without BigInt (the accept path makes one per
 * request): 5 bits per digit, so the 80 random bits are the last 16 digits and the 48 time bits
 * (with two leading zero bits) the first 10, as in ULID.
 */
export function base32Id(nowMs: number, rnd: Uint8Array): string {
  let out = '';
  let t = Math.floor(nowMs) % 2 ** 48;
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = BASE32[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  out += time;
  for (let half = 0; half < 2; half++) {
    // 40 bits (5 bytes) as 8 digits; exact in a double.
    let v = 0;
    for (let i = 0; i < 5; i++) v = v * 256 + rnd[half * 5 + i]!;
    let part = '';
    for (let i = 0; i < 8; i++) {
      part = BASE32[v % 32]! + part;
      v = Math.floor(v / 32);
    }
    out += part;
  }
  return out;
}

/** Event ids: `msg_` + time-sortable base62 (Standard Webhooks convention). */
export function eventId(nowMs: number): string {
  return 'msg_' + timeSortableId(nowMs, BASE62);
}

// randomBytes costs a syscall-sized overhead per call; ids on the accept path draw from a pool.
let pool = Buffer.alloc(0);
let poolOffset = 0;
function randomPool(n: number): Buffer {
  if (poolOffset + n > pool.length) {
    pool = randomBytes(4096);
    poolOffset = 0;
  }
  const out = pool.subarray(poolOffset, poolOffset + n);
  poolOffset += n;
  return out;
}

/** Uniformly random base62 string (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += BASE62[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Short prefixed public ids for rows (`key_…`, `wh_…`). */
export function publicId(prefix: string, length = 16): string {
  return `${prefix}_${randomBase62(length)}`;
}
