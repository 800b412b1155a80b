import { type ActivityKind, activityOf, type Overview, overviewFirstHour } from '../model.js';
import type { DeliveryStore } from '../store.js';
import type { PgDb } from './db.js';

/** A customer's overview: the hourly counters summed over their shards, the queue, the webhook backlog, the throttles. */
export async function overview(db: PgDb, delivery: DeliveryStore, customerId: number, now: number): Promise<Overview> {
  const [rows, counts, throttled] = await Promise.all([
    db.rows<{ hour: number; kind: ActivityKind; count: number }>(
      'SELECT hour, kind, sum(count)::bigint AS count FROM activity_hourly WHERE customer_id = $1 AND hour >= $2 GROUP BY hour, kind',
      [customerId, overviewFirstHour(now)],
    ),
    db.row<{ queued: number; deferred: number; oldest: number | null; backlog: number }>(
      `SELECT (SELECT count(*) FROM recipients WHERE state IN ('queued', 'deferred') AND state = 'queued' AND customer_id = $1)::int AS queued,
              (SELECT count(*) FROM recipients WHERE customer_id = $1 AND state = 'deferred')::int AS deferred,
              (SELECT created_at FROM recipients WHERE customer_id = $1 AND state = 'deferred' ORDER BY message_id LIMIT 1) AS oldest,
              (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE customer_id = $1) AND state = 'pending' AND locked_by IS NULL)::int AS backlog`,
      [customerId],
    ),
    delivery.throttles(),
  ]);
  return {
    ...activityOf(
      rows.map((r) => [r.hour, r.kind, r.count] as const),
      now,
    ),
    queue: { queued: counts!.queued, deferred: counts!.deferred },
    oldestDeferredAt: counts!.oldest,
    webhookBacklog: counts!.backlog,
    throttled,
  };
}
