import type { Reply } from '../domain/outcome.js';
import type { Logger } from '../lib/logger.js';
import type { ItemResult } from './deliver.js';

/** Seconds with millisecond precision, as the log shows them. */
const seconds = (ms: number) => Math.round(Math.max(0, ms)) / 1000;

/** The DSN status of a reply (RFC 3463): its enhanced code, or the class its code implies when the server gave none (as Postfix's dsn= does). */
export function dsnOf(reply: Reply): string {
  return reply.enhanced_code || `${String(reply.code).charAt(0)}.0.0`;
}

/**
 * The fields of one recipient's delivery log line (docs/operations.md, "Logs"): what Postfix's
 * relay=, delay=, delays=, dsn= and TLS lines say, as JSON. `startedAt`: when this attempt
 * started (the group's MX lookup and connection included); `now`: when its outcome was recorded.
 */
export function deliveryFields(result: ItemResult, startedAt: number, now: number): Record<string, unknown> {
  const { item, outcome, via } = result;
  const reply = 'reply' in outcome ? outcome.reply : null;
  return {
    message_id: item.message.messageId,
    recipient: item.recipient.address,
    outcome: outcome.kind,
    attempt: item.recipient.attempts + 1,
    relay: via ? `${via.host}[${via.address}]:${via.port}` : 'none',
    ...(via ? { relay_host: via.host, relay_address: via.address } : {}),
    ...(via?.source ? { pool: via.source.pool, source_ip: via.source.ip } : {}),
    delay: seconds(now - item.message.createdAt),
    attempt_delay: seconds(now - startedAt),
    ...(reply
      ? { dsn: dsnOf(reply), code: reply.code, classification: reply.classification, reply: reply.message }
      : {}),
    ...(outcome.kind === 'suppressed' ? { reason: outcome.reason } : {}),
    ...(via
      ? {
          tls: via.tls !== null,
          ...(via.tls ? { tls_version: via.tls.version, tls_cipher: via.tls.cipher } : {}),
          tls_verified: via.verified,
        }
      : {}),
  };
}

/** One line per recipient of a group, at info. */
export function logDeliveries(log: Logger, results: ItemResult[], startedAt: number, now: number): void {
  for (const result of results) log.info(deliveryFields(result, startedAt, now), 'delivery attempt');
}
