import { type QueueCounts, queueOf, type Status } from '../model.js';
import type { DeliveryStore, NodeStore } from '../store.js';
import { throttleStatus } from '../views.js';
import type { PgDb } from './db.js';

const DAY = 86_400_000;

/** Rows of a table by `state` (the metrics' gauges read this on each scrape). */
export async function countsByState(
  db: PgDb,
  table: 'recipients' | 'webhook_deliveries',
): Promise<Record<string, number>> {
  const rows = await db.rows<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM ${table} GROUP BY state`,
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

/** The recipients still to be sent, waiting or held by a node (QueueCounts). */
async function queueCounts(db: PgDb): Promise<QueueCounts> {
  const rows = await db.rows<{ state: string; claimed: boolean; n: number }>(
    `SELECT r.state, c.recipient_id IS NOT NULL AS claimed, count(*)::int AS n
       FROM recipients r LEFT JOIN recipient_claims c ON c.recipient_id = r.id
      WHERE r.state IN ('queued', 'deferred') GROUP BY 1, 2`,
  );
  return queueOf(rows.map((r) => [r.state, r.claimed, r.n] as const));
}

export async function status(db: PgDb, delivery: DeliveryStore, nodes: NodeStore, now: number): Promise<Status> {
  const iso = (v: number | null) => (typeof v === 'number' ? new Date(v).toISOString() : null);
  const [live, queue, recipients, webhooks, r, throttles] = await Promise.all([
    nodes.list(),
    queueCounts(db),
    countsByState(db, 'recipients'),
    countsByState(db, 'webhook_deliveries'),
    db.row<{
      oldest: number | null;
      next: number | null;
      last_24h: number;
      total: number;
      unmatched: number;
      messages: number;
    }>(
      `SELECT (SELECT min(m.created_at) FROM recipients r JOIN messages m ON m.id = r.message_id WHERE r.state = 'deferred') AS oldest,
              (SELECT min(next_attempt_at) FROM recipients WHERE state IN ('queued', 'deferred')) AS next,
              (SELECT count(*) FROM inbound_messages WHERE created_at > $1)::int AS last_24h,
              (SELECT count(*) FROM inbound_messages)::int AS total,
              (SELECT count(*) FROM inbound_reports WHERE recipient_id IS NULL)::int AS unmatched,
              (SELECT count(*) FROM messages)::int AS messages`,
      [now - DAY],
    ),
    delivery.throttles(),
  ]);
  return {
    nodes: live,
    queue,
    recipients,
    oldest_deferred: iso(r!.oldest),
    next_attempt: iso(r!.next),
    webhooks,
    inbound: { last_24h: r!.last_24h, total: r!.total, reports_unmatched: r!.unmatched },
    messages: r!.messages,
    throttled: throttles.map(throttleStatus),
  };
}

/** When the oldest recipient still to be sent and due became due (its message's creation, or its schedule). */
export async function oldestQueuedAt(db: PgDb, now: number): Promise<number | null> {
  return (
    (
      await db.row<{ at: number | null }>(
        `SELECT min(greatest(m.created_at, coalesce(m.scheduled_at, 0))) AS at FROM recipients r JOIN messages m ON m.id = r.message_id
           WHERE r.state IN ('queued', 'deferred') AND (m.scheduled_at IS NULL OR m.scheduled_at <= $1)`,
        [now],
      )
    )?.at ?? null
  );
}

/** The health check's write: proves the store takes a write now (throws when it cannot). */
export async function touchHealth(db: PgDb, now: number): Promise<void> {
  await db.run('INSERT INTO health (id, at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET at = excluded.at', [now]);
}
