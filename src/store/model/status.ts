import type { DestinationThrottle } from '../../domain/destinations.js';

/** The store's model for what the server reports about itself: the dashboard's overview, the nodes and status. */

export const ACTIVITY_KINDS = ['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const;

export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

export interface Overview {
  /** Totals over the last 24 hours and 7 days, by kind (recipients accepted; outcome events). */
  last24h: Record<ActivityKind, number>;
  last7d: Record<ActivityKind, number>;
  /** One entry per hour, oldest first, for the last 7 days (168 entries). */
  hourly: Array<{ hour: number } & Record<ActivityKind, number>>;
  queue: { queued: number; deferred: number };
  oldestDeferredAt: number | null;
  /** Webhook deliveries waiting for their next attempt (those in flight are not counted). */
  webhookBacklog: number;
  /** Destinations the server is slowing down because they refused it (the server's, not the customer's: one row per receiver). */
  throttled: DestinationThrottle[];
}

const HOUR = 3_600_000;

/** The first hour (epoch hours) the overview's 7 days of hourly counters start at. */
export function overviewFirstHour(now: number): number {
  return Math.floor(now / HOUR) - 7 * 24 + 1;
}

/**
 * The overview's activity from the hourly counters read from `overviewFirstHour(now)` on
 * (hour, kind, count; several rows of one hour and kind add up): the 168 hours, oldest first,
 * and the totals of the last 24 hours and 7 days. One function for both engines, which only read.
 */
export function activityOf(
  rows: Iterable<readonly [hour: number, kind: string, count: number]>,
  now: number,
): Pick<Overview, 'last24h' | 'last7d' | 'hourly'> {
  const nowHour = Math.floor(now / HOUR);
  const first = overviewFirstHour(now);
  const zero = (): Record<ActivityKind, number> => ({
    accepted: 0,
    delivered: 0,
    deferred: 0,
    bounced: 0,
    complained: 0,
  });
  const hourly = Array.from({ length: 7 * 24 }, (_, i) => ({ hour: first + i, ...zero() }));
  const last24h = zero();
  const last7d = zero();
  for (const [hour, kind, count] of rows) {
    if (!(kind in last7d)) continue;
    const k = kind as ActivityKind;
    const slot = hourly[hour - first];
    if (slot) slot[k] += count;
    last7d[k] += count;
    if (hour > nowHour - 24) last24h[k] += count;
  }
  return { last24h, last7d, hourly };
}

/** A daemon on the store, as it registers itself (docs/cluster.md). */
export interface NodeInfo {
  /** Fresh at every start; the worker its claims carry. */
  id: string;
  /** server.node_name. */
  name: string;
  pid: number;
  /** Silent longer than this, the node is dead (cluster.lease). */
  leaseMs: number;
}

/** A live node as status and the dashboard show it: times by the store's clock, and the claims it holds. */
export interface NodeView {
  id: string;
  name: string;
  pid: number;
  lease_ms: number;
  started_at: string;
  heartbeat_at: string;
  claims: { recipients: number; webhook_deliveries: number };
}

/** What releasing dead nodes' claims freed. */
export interface Released {
  recipients: number;
  webhook_deliveries: number;
  /** Ids of the dead nodes whose rows were removed. */
  nodes: string[];
}

/**
 * The queue as `status` counts it: the recipients still to be sent, each in one of three parts.
 * `queued` waits for its first attempt (or its scheduled time), `deferred` for its next one, and
 * `in_flight` is claimed by a node and being delivered now. Recipients in a final state
 * (delivered, bounced, complained, suppressed, canceled) are not queue.
 */
export interface QueueCounts {
  queued: number;
  deferred: number;
  in_flight: number;
}

/** The recipient states that are still to be sent (docs/operations.md, "Watching it"). */
export const WAITING_STATES = ['queued', 'deferred'] as const;

/**
 * The queue from the waiting recipients counted by state and whether a node holds them (rows of
 * state, claimed, count); one function for both engines, which only count.
 */
export function queueOf(rows: Iterable<readonly [state: string, claimed: boolean, count: number]>): QueueCounts {
  const q: QueueCounts = { queued: 0, deferred: 0, in_flight: 0 };
  for (const [state, claimed, count] of rows) {
    if (!(WAITING_STATES as readonly string[]).includes(state)) continue;
    if (claimed) q.in_flight += count;
    else q[state as (typeof WAITING_STATES)[number]] += count;
  }
  return q;
}

export interface Status {
  /** The live nodes (one on SQLite). */
  nodes: NodeView[];
  /** The recipients still to be sent (QueueCounts). */
  queue: QueueCounts;
  /** Every recipient the store keeps, by state, final ones included. */
  recipients: Record<string, number>;
  oldest_deferred: string | null;
  next_attempt: string | null;
  webhooks: Record<string, number>;
  inbound: { last_24h: number; total: number; reports_unmatched: number };
  messages: number;
  /**
   * Destinations slowed down because they refused us (adaptive backoff), with the refusal; `node`:
   * the node whose own throttling it is (limits per node, on PostgreSQL), absent: one for all.
   */
  throttled: Array<{
    destination: string;
    node?: string;
    connections: number;
    refusals: number;
    paused_until: string;
    since: string;
    reason: { code: number; enhanced_code: string; message: string };
  }>;
}
