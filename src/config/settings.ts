import type { DestinationLimits } from '../domain/destinations.js';
import type { SuppressionPolicy } from '../domain/outcome.js';
import { type Config, destinationLimits, suppressionPolicy } from './schema.js';

/**
 * What each running part takes from the configuration, built by one function per part: at start,
 * and again on reload (SIGHUP), when the composition root hands the part the new value in place of
 * the old (main.ts, its table of reloaders). A part reads its settings at use time; the
 * configuration object itself never changes after start.
 */
export interface Live<T> {
  current: T;
}

export function live<T>(current: T): Live<T> {
  return { current };
}

/** The SMTP listener's reloadable settings. */
export interface InboundSettings {
  /** inbound.rate_per_minute and inbound.monthly_limit: the server-wide defaults a domain may override. */
  limits: { ratePerMinute: number; monthlyLimit: number };
  /** How reports that arrive at a return path suppress (bounces.*). */
  suppression: SuppressionPolicy;
  /** STARTTLS is offered while smtp.tls.cert and smtp.tls.key are set (decided per connection). */
  starttls: boolean;
}

export function inboundSettings(c: Config): InboundSettings {
  return {
    limits: { ratePerMinute: c.inbound.rate_per_minute, monthlyLimit: c.inbound.monthly_limit },
    suppression: suppressionPolicy(c),
    starttls: Boolean(c.smtp['tls.cert'] && c.smtp['tls.key']),
  };
}

/** The send endpoints' reloadable settings. */
export interface SendSettings {
  /** limits.max_recipients, to, cc and bcc together. */
  maxRecipients: number;
  /** limits.idempotency_ttl (ms). */
  idempotencyTtl: number;
}

export function sendSettings(c: Config): SendSettings {
  return { maxRecipients: c.limits.max_recipients, idempotencyTtl: c.limits.idempotency_ttl };
}

/** The outbound side's reloadable settings. */
export interface OutboundSettings {
  /** outbound.hold: while true nothing new is claimed. */
  hold: boolean;
  /** How delivery replies suppress (bounces.*). */
  suppression: SuppressionPolicy;
  /** Each destination's limits (outbound.concurrency_per_domain, messages_per_connection, messages_per_minute, destination_limits). */
  limits: (destination: string) => DestinationLimits;
}

export function outboundSettings(c: Config): OutboundSettings {
  return { hold: c.outbound.hold, suppression: suppressionPolicy(c), limits: destinationLimits(c) };
}

/** The submission listeners' reloadable settings. */
export interface SubmissionSettings {
  /** STARTTLS is offered while submission.tls.cert and submission.tls.key are set (decided per connection). */
  starttls: boolean;
}

export function submissionSettings(c: Config): SubmissionSettings {
  return { starttls: Boolean(c.submission['tls.cert'] && c.submission['tls.key']) };
}
