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
