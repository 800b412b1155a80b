import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/** scrypt cost N = 2^15, r = 8, p = 1 (32 MiB, about 100 ms on this machine): slow to guess, fast enough for a login. */
const PARAMS = { N: 32768, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const MAXMEM = 64 * 1024 * 1024;

function derive(password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: MAXMEM };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (e, key) => (e ? reject(e) : resolve(key))),
  );
}

/** The shortest password a user may be given, in characters (code points). */
export const MIN_PASSWORD_LENGTH = 10;

/**
 * The password policy, decided here for every door that sets a password (the CLI's `users add`
 * and `users passwd`; a dashboard form would ask the same): what is wrong with a new password, or
 * null when it may be used. Asked of the first entry, before any confirmation is.
 */
export function passwordProblem(password: string): string | null {
  if ([...password.normalize('NFC')].length < MIN_PASSWORD_LENGTH)
    return `a password has at least ${MIN_PASSWORD_LENGTH} characters`;
  return null;
}

/** "scrypt$N$r$p$salt$hash" with Base64 salt and hash: the parameters travel with the hash. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Whether the password matches; a malformed stored hash matches nothing. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const expected = Buffer.from(parts[5]!, 'base64');
  if (!Number.isInteger(N) || expected.length !== KEY_LENGTH) return false;
  const key = await derive(password, Buffer.from(parts[4]!, 'base64'), { N, r, p });
  return timingSafeEqual(key, expected);
}

/** A password for an account that does not exist, so that a wrong e-mail address costs as much time as a wrong password. */
export const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';
