import { isIP } from 'node:net';
import { type DestinationLimits, limitsFor, parseDestinationRules } from '../domain/destinations.js';
import type { ServerIdentity } from '../domain/dns-records.js';
import type { SuppressionPolicy } from '../domain/outcome.js';
import type { QuotaDefaults } from '../domain/quotas.js';
import type { ReputationSettings } from '../domain/reputation.js';
import { defaultPool, type Pool } from './pools.js';
import type { Config } from './schema.js';

/**
 * What each running part takes from the configuration, built by one function per part: at start,
 * and again on reload (SIGHUP), when the composition root hands the part the new value in place of
 * the old (daemon/reload.ts, its table of reloaders). A part reads its settings at use time; the
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
  /** The default send quotas (limits.send_per_* and limits.sandbox_send_per_*). */
  quotas: QuotaDefaults;
}

export function sendSettings(c: Config): SendSettings {
  return { maxRecipients: c.limits.max_recipients, idempotencyTtl: c.limits.idempotency_ttl, quotas: quotaDefaults(c) };
}

/** The server's default send quotas (domain/quotas.ts) from [limits]. */
export function quotaDefaults(c: Config): QuotaDefaults {
  const l = c.limits;
  return {
    live: [l.send_per_minute, l.send_per_day, l.send_per_month],
    sandbox: [l.sandbox_send_per_minute, l.sandbox_send_per_day, l.sandbox_send_per_month],
  };
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

/** The [bounces] keys as the suppression policy (domain/outcome.ts). */
export function suppressionPolicy(c: Pick<Config, 'bounces'>): SuppressionPolicy {
  return { mailboxFull: c.bounces.suppress_mailbox_full, disabled: c.bounces.suppress_disabled };
}

/** outbound.relay parsed: host, port and TLS mode; null for direct delivery. Throws naming the key when malformed. */
export function relayTarget(c: Pick<Config, 'outbound'>): { host: string; port: number; implicitTls: boolean } | null {
  const text = c.outbound.relay.trim();
  if (!text) return null;
  const m = /^(smtps?):\/\/(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?\/?$/i.exec(text);
  if (!m)
    throw new Error(`outbound.relay: expected "smtp://host:587" or "smtps://host:465", got ${JSON.stringify(text)}`);
  const implicitTls = m[1]!.toLowerCase() === 'smtps';
  const port = m[3] ? Number(m[3]) : implicitTls ? 465 : 587;
  if (port < 1 || port > 65535) throw new Error(`outbound.relay: port ${port} is out of range`);
  return { host: m[2]!.replace(/^\[|\]$/g, '').toLowerCase(), port, implicitTls };
}

/** The return path's domain (bounces+<token>@<domain>): smtp.return_path_domain, else the server's hostname. */
export function returnPathDomain(c: Pick<Config, 'smtp' | 'server'>): string {
  return c.smtp.return_path_domain || c.server.hostname;
}

/** The label of a sending domain's own return path host, <label>.<domain> (smtp.return_path_label), lower case. Throws when it is not one DNS label. */
export function returnPathLabel(c: Pick<Config, 'smtp'>): string {
  const label = c.smtp.return_path_label.trim().toLowerCase();
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label))
    throw new Error(`smtp.return_path_label: expected one DNS label such as "bounces", got ${JSON.stringify(label)}`);
  return label;
}

/**
 * The addresses the return path domain's SPF record lists, as SPF mechanisms (ip4:… and ip6:…):
 * outbound.source_addresses when it lists any (every node's, an explicit override), else every
 * address of outbound.pools. Throws naming an entry that is not an IP address.
 */
export function spfSources(c: Pick<Config, 'outbound'>): string[] {
  const listed = c.outbound.source_addresses.map((raw) => {
    const a = raw.trim();
    const v = isIP(a);
    if (v === 0) throw new Error(`outbound.source_addresses: "${raw}" is not an IPv4 or IPv6 address`);
    return `ip${v}:${a.toLowerCase()}`;
  });
  if (listed.length) return listed;
  const fromPools = c.outbound.pools.flatMap((p) => p.addresses.map((a) => `ip${isIP(a.ip)}:${a.ip}`));
  return [...new Set(fromPools)];
}

/** The pool of mail whose message and customer name none (outbound.default_pool, else the first); null without pools. Throws when default_pool names no pool. */
export function configuredDefaultPool(c: Pick<Config, 'outbound'>): Pool | null {
  try {
    return defaultPool(c.outbound.pools, c.outbound.default_pool.trim());
  } catch (e) {
    throw new Error(`outbound.default_pool: ${(e as Error).message}`);
  }
}

/** What the DNS records of the server and of each domain are made from (domain/dns-records.ts). */
export function serverIdentity(c: Pick<Config, 'smtp' | 'server' | 'outbound'>): ServerIdentity {
  return {
    hostname: c.server.hostname,
    returnPathDomain: returnPathDomain(c),
    returnPathLabel: returnPathLabel(c),
    spfSources: spfSources(c),
  };
}

/** outbound's destination limits as a lookup, as configured now (a reload builds a new one). Throws naming the bad entry. */
export function destinationLimits(c: Pick<Config, 'outbound'>): (destination: string) => DestinationLimits {
  const o = c.outbound;
  const rules = parseDestinationRules(o.destination_limits);
  const base = {
    connections: o.concurrency_per_domain,
    perConnection: o.messages_per_connection,
    perMinute: o.messages_per_minute,
  };
  return (destination) => limitsFor(destination, rules, base);
}

/** The [reputation] thresholds and window (domain/reputation.ts); a warning above its pause threshold is refused. */
export function reputationSettings(c: Pick<Config, 'reputation'>): ReputationSettings {
  const r = c.reputation;
  for (const kind of ['bounce', 'complaint'] as const)
    if (r[`warning_${kind}_rate`] > r[`pause_${kind}_rate`])
      throw new Error(
        `reputation.warning_${kind}_rate (${r[`warning_${kind}_rate`]}%) is above reputation.pause_${kind}_rate (${r[`pause_${kind}_rate`]}%)`,
      );
  return {
    windowMs: r.window,
    minRecipients: r.min_recipients,
    warning: { bounce: r.warning_bounce_rate, complaint: r.warning_complaint_rate },
    pause: { bounce: r.pause_bounce_rate, complaint: r.pause_complaint_rate },
  };
}
