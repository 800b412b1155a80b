import type { AttemptBatch, AttemptRecord, AttemptView } from '../model.js';
import { type AttemptRow, attemptView } from '../views.js';
import { BOUND_LIMIT, type Db } from './db.js';

/** The id of the delivery row of an event to an endpoint (fan-out, not replay), if it has one. */
export function eventDeliveryId(db: Db, eventSeq: number, endpointId: string): number | undefined {
  return db.get<{ id: number }>(
    "SELECT id FROM webhook_deliveries WHERE event_seq = ? AND endpoint_id = ? AND kind = 'event'",
    eventSeq,
    endpointId,
  )?.id;
}

export function hasDelivery(db: Db, eventSeq: number, endpointId: string): boolean {
  return eventDeliveryId(db, eventSeq, endpointId) !== undefined;
}

export function disableEndpoint(db: Db, id: string, reason: string): void {
  db.run('UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ? WHERE id = ?', reason, id);
}

/** Logs an attempt; `deliveryId` stands in for the record's when given (a row created with the attempt). */
export function logAttempt(db: Db, a: AttemptRecord, deliveryId = a.deliveryId): void {
  db.run(
    'INSERT INTO webhook_attempts (endpoint_id, delivery_id, event_id, event_type, attempt, at, status, error, duration_ms, response) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    a.endpointId,
    deliveryId,
    a.eventId,
    a.eventType,
    a.attempt,
    a.at,
    a.status,
    a.error,
    a.durationMs,
    a.response,
  );
}

/** After an attempt: succeeded, failed for good, or pending again at `nextAt`. Unlocks the row. */
export function settleDelivery(
  db: Db,
  id: string | number,
  state: 'succeeded' | 'failed' | 'pending',
  attempts: number,
  nextAt: number | null,
  now: number,
): void {
  db.run(
    'UPDATE webhook_deliveries SET state = ?, attempts = ?, next_attempt_at = ?, locked_by = NULL, locked_at = NULL, updated_at = ? WHERE id = ?',
    state,
    attempts,
    nextAt,
    now,
    id,
  );
}

/**
 * Logs and settles a batch of attempts, creating the rows of deliveries fanned out in memory,
 * and moves the fan-out cursor (never back). An attempt to an endpoint deleted meanwhile is
 * dropped with its delivery: its rows would have gone with the endpoint.
 */
export function recordAttempts(db: Db, input: AttemptBatch): boolean {
  const { now } = input;
  const exists = new Map<string, boolean>();
  const alive = (id: string) => {
    let v = exists.get(id);
    if (v === undefined) exists.set(id, (v = db.get('SELECT 1 FROM webhook_endpoints WHERE id = ?', id) !== undefined));
    return v;
  };
  const create = (endpointId: string, eventSeq: number, state: string, attempts: number, nextAt: number | null) =>
    db.run(
      "INSERT OR IGNORE INTO webhook_deliveries (endpoint_id, event_seq, kind, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, 'event', ?, ?, ?, ?, ?)",
      endpointId,
      eventSeq,
      state,
      attempts,
      nextAt,
      now,
      now,
    );
  for (const s of input.batch) {
    const endpointId = s.attempt.endpointId;
    if (!alive(endpointId)) continue;
    let id = s.deliveryId;
    if (id === null) {
      const r = create(endpointId, s.eventSeq, s.state, s.attempt.attempt, s.nextAt);
      if (r.changes === 1) id = Number(r.lastInsertRowid);
      else {
        // A row from before a restart (fanned out again): settle that one.
        id = eventDeliveryId(db, s.eventSeq, endpointId)!;
        settleDelivery(db, id, s.state, s.attempt.attempt, s.nextAt, now);
      }
    } else settleDelivery(db, id, s.state, s.attempt.attempt, s.nextAt, now);
    logAttempt(db, s.attempt, id);
    // Standard Webhooks: 410 Gone means the receiver wants no more; disable the endpoint.
    if (s.disableEndpoint) disableEndpoint(db, endpointId, '410 Gone');
  }
  for (const p of input.pending) if (alive(p.endpointId)) create(p.endpointId, p.eventSeq, 'pending', 0, now);
  if (input.cursor !== null)
    db.run(
      "UPDATE settings SET value = ? WHERE name = 'webhook_fanout_seq' AND CAST(value AS INTEGER) < ?",
      String(input.cursor.seq),
      input.cursor.seq,
    );
  return true;
}

/** Recent attempts to an endpoint, newest first, paged by attempt id. */
export function listAttempts(
  db: Db,
  endpointId: string,
  limit: number,
  before?: number,
): Array<AttemptView & { cursor: number }> {
  const rows = db.all<AttemptRow>(
    `SELECT a.id, a.event_id, a.event_type, a.attempt, a.at, a.status, a.error, a.duration_ms, a.response, d.state AS delivery_state, d.kind AS delivery_kind
       FROM webhook_attempts a LEFT JOIN webhook_deliveries d ON d.id = a.delivery_id
       WHERE a.endpoint_id = ? AND a.id < ? ORDER BY a.id DESC ${BOUND_LIMIT}`,
    endpointId,
    before ?? Number.MAX_SAFE_INTEGER,
    limit,
  );
  return rows.map(attemptView);
}
