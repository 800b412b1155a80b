import { createHmac, randomBytes } from 'node:crypto';

/** A new endpoint secret: `whsec_` + Base64 of 32 random bytes (Standard Webhooks). */
export function newSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
}

/**
 * The `webhook-signature` value: `v1,` + Base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`, keyed by
 * the Base64-decoded part of the secret after `whsec_`. The body is signed as the exact bytes sent.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: Buffer): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}
