import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/** A new endpoint secret: `whsec_` + Base64 of 32 random bytes (Standard Webhooks). */
export function newSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
}

/**
 * The `webhook-signature` value: `v1,` + Base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`, keyed by
 * the Base64-decoded part of the secret after `whsec_`. A string body is signed as its UTF-8
 * bytes, which is what is sent; it goes to the HMAC in one piece with the prefix.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  const hmac = createHmac('sha256', keyOf(secret));
  const mac = typeof body === 'string' ? hmac.update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64') : hmac.update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
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
