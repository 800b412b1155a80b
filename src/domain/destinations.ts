import { getDomain } from 'tldts';
import type { Reply } from './outcome.js';

/**
 * Destinations: where a recipient domain's mail really goes. Receivers throttle by the servers
 * that take the mail, not by the domain on the address: gmail.com and googlemail.com are both
 * gmail-smtp-in.l.google.com, and every domain hosted at Microsoft is *.mail.protection.outlook.com.
 * So a destination is named by the registrable domain (public suffix list, via tldts) of the
 * domain's first MX host: "google.com", "outlook.com", "yahoodns.net". docs/delivery.md.
 */

/** The destination an MX host set belongs to: the registrable domain of the first host by preference (ties: by name). */
export function destinationOf(hosts: ReadonlyArray<{ host: string; priority: number }>): string | null {
  if (hosts.length === 0) return null;
  const first = [...hosts].sort(
    (a, b) => a.priority - b.priority || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0),
  )[0]!.host;
  return destinationOfHost(first);
}

/** A host's destination name: its registrable domain, or the host itself (an address, a single label). */
export function destinationOfHost(host: string): string {
  const h = host.toLowerCase().replace(/\.$/, '');
  return getDomain(h) ?? h;
}

/**
 * The throttle's key for a destination reached from one source address (outbound.pools): each
 * (destination, address) has the destination's limits and backoff of its own, as receivers count
 * per sending address. Without pools the destination's name is the key.
 */
export function laneOf(destination: string, ip: string): string {
  return `${destination} from ${ip}`;
}

/** The destination a throttle key names (the key itself when it is a destination's). */
export function destinationOfLane(key: string): string {
  const at = key.indexOf(' from ');
  return at < 0 ? key : key.slice(0, at);
}

/** The holder of a destination's throttling shared by every node (outbound.limits_scope = "cluster"); otherwise a node's name holds its own. */
export const CLUSTER_THROTTLE = '';

/** Limits for one destination. */
export interface DestinationLimits {
  /** Connections open at once. */
  connections: number;
  /** Messages sent over one connection before it is closed. */
  perConnection: number;
  /** Messages started in any 60 seconds; 0: no limit. */
  perMinute: number;
}

export interface DestinationRule {
  destination: string;
  limits: Partial<DestinationLimits>;
}

const SETTINGS: Record<string, { field: keyof DestinationLimits; min: number; max: number }> = {
  connections: { field: 'connections', min: 1, max: 1000 },
  per_connection: { field: 'perConnection', min: 1, max: 10_000 },
  per_minute: { field: 'perMinute', min: 0, max: 1_000_000 },
};

/**
 * Parses outbound.destination_limits: each entry a destination name and settings, e.g.
 * "outlook.com connections=5 per_minute=300". Throws with a message naming the bad entry.
 */
export function parseDestinationRules(entries: readonly string[]): DestinationRule[] {
  const rules: DestinationRule[] = [];
  const seen = new Set<string>();
  for (const entry of entries) {
    const [name, ...settings] = entry.trim().split(/\s+/);
    const destination = (name ?? '').toLowerCase();
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(destination))
      throw new Error(`${JSON.stringify(entry)}: expected a destination name such as "outlook.com" first`);
    if (seen.has(destination)) throw new Error(`${JSON.stringify(entry)}: ${destination} is named twice`);
    seen.add(destination);
    if (settings.length === 0)
      throw new Error(`${JSON.stringify(entry)}: no settings (connections=N, per_connection=N, per_minute=N)`);
    const limits: Partial<DestinationLimits> = {};
    for (const s of settings) {
      const m = /^([a-z_]+)=(\d{1,9})$/.exec(s);
      const spec = m ? SETTINGS[m[1]!] : undefined;
      if (!m || !spec)
        throw new Error(`${JSON.stringify(entry)}: "${s}" is not one of connections=N, per_connection=N, per_minute=N`);
      const n = Number(m[2]);
      if (n < spec.min || n > spec.max)
        throw new Error(`${JSON.stringify(entry)}: ${m[1]} must be ${spec.min} to ${spec.max}`);
      limits[spec.field] = n;
    }
    rules.push({ destination, limits });
  }
  return rules;
}

/** The limits of one destination: its rule's settings over the defaults. */
export function limitsFor(
  destination: string,
  rules: readonly DestinationRule[],
  defaults: DestinationLimits,
): DestinationLimits {
  const rule = rules.find((r) => r.destination === destination);
  return rule ? { ...defaults, ...rule.limits } : defaults;
}

/** A destination slowed down because it refused us (outbound/throttle.ts): what is stored and shown. */
export interface DestinationThrottle {
  destination: string;
  /** Connections allowed now (fewer than configured). */
  connections: number;
  /** Refusals not yet worked off by deliveries. */
  strikes: number;
  pausedUntil: number;
  /** The refusal that last slowed it. */
  reason: Reply;
  /** When this spell of throttling began. */
  since: number;
  /** The node whose own throttling this is, where nodes are limited each on its own; absent: one for all. */
  node?: string;
}
