import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';

/** A new endpoint secret: `whsec_` + Base64 of 32 random bytes (Standard Webhooks). */
export function newSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
}

/**
 * The `webhook-signature` value: `v1,` + Base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`, keyed by
 * the Base64-decoded part of the secret after `whsec_`. The body (the event envelope as stored) is
 * signed as its UTF-8 bytes, which is what is sent, in one piece with the prefix.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  return 'v1,' + createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64');
}

/** An endpoint's secrets: the current one, and the one a rotation replaced with when it stops signing. */
export interface Secrets {
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
}

/**
 * The `webhook-signature` header: the current secret's signature, preceded by the replaced
 * secret's while its grace period lasts, space-separated as Standard Webhooks allows
 * (`v1,<old> v1,<new>`), so a receiver verifying with either secret accepts the delivery.
 */
export function signatureHeader(s: Secrets, id: string, timestamp: number, body: string, now: number): string {
  const current = signWebhook(s.secret, id, timestamp, body);
  return s.previousSecret !== null && s.previousSecretExpiresAt !== null && now < s.previousSecretExpiresAt
    ? `${signWebhook(s.previousSecret, id, timestamp, body)} ${current}`
    : current;
}

// The decoded key per secret (one per endpoint), so each signature does not decode it again.
const keys = new Map<string, KeyObject>();
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= 1000) keys.clear();
    key = createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
    keys.set(secret, key);
  }
  return key;
}
