import { type ActivityKind, activityOf, type Overview, overviewFirstHour } from '../model.js';
import type { Db } from './db.js';
import { listThrottles } from './destinations.js';

/**
 * A customer's overview. Reads the hourly counters the triggers keep (at most 7 × 24 × 5 rows), the
 * queue through its partial due index and the webhook backlog through the dispatcher's due
 * index: nothing here grows with the number of messages stored.
 */
export function overview(db: Db, customerId: number, now: number): Overview {
  // Up to 840 rows: as arrays, which better-sqlite3 builds at once (an object row is built
  // property by property, about twice the time).
  const rows = db
    .statement('SELECT hour, kind, count FROM activity_hourly WHERE customer_id = ? AND hour >= ?')
    .raw(true)
    .all(customerId, overviewFirstHour(now)) as Array<[number, ActivityKind, number]>;
  // Each through a partial index: the queued through recipients_due (the condition repeats the
  // index's, the only way SQLite sees it applies; this reads the queue), the deferred through
  // recipients_undelivered (customer and state are its leading columns: a count of its entries).
  const queue = {
    queued: db.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM recipients WHERE state IN ('queued', 'deferred') AND state = 'queued' AND customer_id = ?",
      customerId,
    )!.n,
    deferred: db.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM recipients WHERE customer_id = ? AND state = 'deferred'",
      customerId,
    )!.n,
  };
  // The oldest deferred is the one of the smallest message id (ids grow with acceptance time),
  // the first entry of recipients_undelivered for the state.
  const oldestDeferredAt =
    db.get<{ created_at: number }>(
      "SELECT created_at FROM recipients WHERE customer_id = ? AND state = 'deferred' ORDER BY message_id LIMIT 1",
      customerId,
    )?.created_at ?? null;
  const webhookBacklog = db.get<{ n: number }>(
    "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE customer_id = ?) AND state = 'pending' AND locked_by IS NULL",
    customerId,
  )!.n;
  return { ...activityOf(rows, now), queue, oldestDeferredAt, webhookBacklog, throttled: listThrottles(db) };
}
