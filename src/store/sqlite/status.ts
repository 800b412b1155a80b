import { type QueueCounts, queueOf, type Status } from '../model.js';
import { throttleStatus } from '../views.js';
import type { Db } from './db.js';
import { listThrottles } from './destinations.js';
import { listNodes } from './nodes.js';

/** Rows of a table by `state` (the metrics' gauges read this on each scrape). */
export function countsByState(db: Db, table: 'recipients' | 'webhook_deliveries'): Record<string, number> {
  const rows = db.all<{ state: string; n: number }>(`SELECT state, COUNT(*) AS n FROM ${table} GROUP BY state`);
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

/**
 * When the oldest recipient still to be sent (queued or deferred) became due: its message's
 * acceptance, or its scheduled time once that has come (a message scheduled for later is not
 * waiting); null when there is none. The queue-age gauge reads this on each scrape, through the
 * partial index of queued and deferred recipients.
 */
export function oldestQueuedAt(db: Db, now: number): number | null {
  const row = db.get<{ at: number | null }>(
    `SELECT MIN(MAX(m.created_at, COALESCE(m.scheduled_at, 0))) AS at FROM recipients r JOIN messages m ON m.id = r.message_id
     WHERE r.state IN ('queued', 'deferred') AND (m.scheduled_at IS NULL OR m.scheduled_at <= ?)`,
    now,
  );
  return row?.at ?? null;
}

/** The recipients still to be sent, waiting or held by a node (QueueCounts), read through the partial index of queued and deferred recipients. */
export function queueCounts(db: Db): QueueCounts {
  const rows = db.all<{
    state: string;
    claimed: number;
    n: number;
  }>(`SELECT r.state, c.recipient_id IS NOT NULL AS claimed, COUNT(*) AS n
         FROM recipients r LEFT JOIN recipient_claims c ON c.recipient_id = r.id
        WHERE r.state IN ('queued', 'deferred') GROUP BY 1, 2`);
  return queueOf(rows.map((r) => [r.state, r.claimed === 1, r.n] as const));
}

/** The health check's write: proves the store takes a write now (throws when it cannot). */
export function touchHealth(db: Db, now: number): void {
  db.run('INSERT INTO health (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at', now);
}

/** What `posthaste status` shows: queue depth by state, oldest deferred, webhook backlog, inbound counts. */
export function status(db: Db, now: number, held: boolean): Status {
  const iso = (v: unknown) => (typeof v === 'number' ? new Date(v).toISOString() : null);
  return {
    nodes: listNodes(db, held),
    queue: queueCounts(db),
    recipients: countsByState(db, 'recipients'),
    oldest_deferred: iso(
      db.get<{ at: number | null }>(
        "SELECT MIN(m.created_at) AS at FROM recipients r JOIN messages m ON m.id = r.message_id WHERE r.state = 'deferred'",
      )!.at,
    ),
    next_attempt: iso(
      db.get<{ at: number | null }>(
        "SELECT MIN(next_attempt_at) AS at FROM recipients WHERE state IN ('queued', 'deferred')",
      )!.at,
    ),
    webhooks: countsByState(db, 'webhook_deliveries'),
    inbound: {
      last_24h: db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM inbound_messages WHERE created_at > ?',
        now - 86_400_000,
      )!.n,
      total: db.get<{ n: number }>('SELECT COUNT(*) AS n FROM inbound_messages')!.n,
      reports_unmatched: db.get<{ n: number }>('SELECT COUNT(*) AS n FROM inbound_reports WHERE recipient_id IS NULL')!
        .n,
    },
    messages: db.get<{ n: number }>('SELECT COUNT(*) AS n FROM messages')!.n,
    throttled: listThrottles(db).map(throttleStatus),
  };
}
