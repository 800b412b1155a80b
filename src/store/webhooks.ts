import type { Db } from './db.js';
import { publicId } from '../lib/ids.js';

export interface Endpoint {
  id: string;
  customerId: number;
  url: string;
  events: string[] | null;
  description: string;
  secret: string;
  enabled: boolean;
  disabledReason: string | null;
  createdAt: number;
}

interface EndpointRow {
  id: string;
  customer_id: number;
  url: string;
  events: string | null;
  description: string;
  secret: string;
  enabled: number;
  disabled_reason: string | null;
  created_at: number;
}

const toEndpoint = (r: EndpointRow): Endpoint => ({
  id: r.id,
  customerId: r.customer_id,
  url: r.url,
  events: r.events ? (JSON.parse(r.events) as string[]) : null,
  description: r.description,
  secret: r.secret,
  enabled: r.enabled === 1,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
});

export function createEndpoint(db: Db, input: { customerId: number; url: string; events: string[] | null; description: string; secret: string; now: number }): Endpoint {
  const id = publicId('wh', 20);
  db.statement('INSERT INTO webhook_endpoints (id, customer_id, url, events, description, secret, enabled, created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)').run(
    id,
    input.customerId,
    input.url,
    input.events ? JSON.stringify(input.events) : null,
    input.description,
    input.secret,
    input.now,
  );
  return getEndpoint(db, id)!;
}

export function getEndpoint(db: Db, id: string, customerId?: number): Endpoint | undefined {
  const r = db.statement('SELECT * FROM webhook_endpoints WHERE id = ?').get(id) as EndpointRow | undefined;
  if (!r || (customerId !== undefined && r.customer_id !== customerId)) return undefined;
  return toEndpoint(r);
}

export function listEndpoints(db: Db, customerId?: number): Endpoint[] {
  const rows = (customerId === undefined
    ? db.statement('SELECT * FROM webhook_endpoints ORDER BY created_at DESC, id').all()
    : db.statement('SELECT * FROM webhook_endpoints WHERE customer_id = ? ORDER BY created_at DESC, id').all(customerId)) as EndpointRow[];
  return rows.map(toEndpoint);
}

export function deleteEndpoint(db: Db, id: string): void {
  db.statement('DELETE FROM webhook_endpoints WHERE id = ?').run(id);
}

export function disableEndpoint(db: Db, id: string, reason: string): void {
  db.statement('UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ? WHERE id = ?').run(reason, id);
}

/** How many deliveries the claimer may take now, per endpoint; `take` counts one taken. */
export interface ClaimRoom {
  room(endpointId: string): number;
  take(endpointId: string): void;
}

/** Claims taken by the fan-out itself, within `room`, locked for `worker`. */
export interface FanOutClaim {
  worker: string;
  room: ClaimRoom;
  /** The claimed deliveries are appended here. */
  into: ClaimedDelivery[];
}

/**
 * Creates the delivery rows for events not yet fanned out: one per event and enabled endpoint of
 * its customer that subscribes to its type and existed when the event was written. Advances the
 * cursor in the same transaction. Returns how many rows were created.
 *
 * With `claim`, rows for an endpoint that has room are created already claimed (locked, as
 * claimDeliveries would lock them) and returned, which saves claiming them in a second
 * transaction; the others are created pending, due now. Locks belong to this process only: the
 * daemon releases them all at start, so a crash cannot strand a claimed row.
 */
export function fanOut(db: Db, now: number, limit = 1000, claim?: FanOutClaim): number {
  return db.tx(() => {
    const cursor = Number((db.statement("SELECT value FROM settings WHERE name = 'webhook_fanout_seq'").get() as { value: string }).value);
    const events = db.statement('SELECT seq, id, customer_id, type, body, created_at FROM events WHERE seq > ? ORDER BY seq LIMIT ?').all(cursor, limit) as Array<{
      seq: number;
      id: string;
      customer_id: number;
      type: string;
      body: string;
      created_at: number;
    }>;
    if (events.length === 0) return 0;
    const endpoints = new Map<number, Endpoint[]>();
    const insert = db.statement(
      "INSERT OR IGNORE INTO webhook_deliveries (endpoint_id, event_seq, kind, state, attempts, next_attempt_at, locked_by, locked_at, created_at, updated_at) VALUES (?, ?, 'event', 'pending', 0, ?, ?, ?, ?, ?)",
    );
    let n = 0;
    for (const e of events) {
      let list = endpoints.get(e.customer_id);
      if (!list) endpoints.set(e.customer_id, (list = listEndpoints(db, e.customer_id).filter((x) => x.enabled)));
      for (const ep of list) {
        if (ep.createdAt > e.created_at || (ep.events && !ep.events.includes(e.type))) continue;
        const take = claim !== undefined && claim.room.room(ep.id) > 0;
        const r = insert.run(ep.id, e.seq, now, take ? claim.worker : null, take ? now : null, now, now);
        n += r.changes;
        if (take && r.changes === 1) {
          claim.room.take(ep.id);
          claim.into.push({ id: Number(r.lastInsertRowid), endpointId: ep.id, eventSeq: e.seq, attempts: 0, event: { id: e.id, type: e.type, body: e.body } });
        }
      }
    }
    db.statement("UPDATE settings SET value = ? WHERE name = 'webhook_fanout_seq'").run(String(events[events.length - 1]!.seq));
    return n;
  });
}

/** The ids of the enabled endpoints (all customers). */
export function enabledEndpointIds(db: Db): string[] {
  return db.statement('SELECT id FROM webhook_endpoints WHERE enabled = 1').pluck().all() as string[];
}

export interface ClaimedDelivery {
  id: number;
  endpointId: string;
  eventSeq: number;
  attempts: number;
  /** The event as stored (loaded with the claim). */
  event: { id: string; type: string; body: string };
}

/**
 * Claims due deliveries in one transaction, endpoint by endpoint through the (endpoint_id,
 * next_attempt_at) index, each endpoint within its `room` (the claimer's quota less what it
 * already holds), so a dead endpoint's backlog cannot crowd out the others.
 */
export function claimDeliveries(db: Db, worker: string, now: number, room: ClaimRoom): ClaimedDelivery[] {
  return db.tx(() => {
    const endpoints = enabledEndpointIds(db);
    const due = db.statement(
      `SELECT d.id, d.endpoint_id, d.event_seq, d.attempts, e.id AS event_id, e.type AS event_type, e.body AS event_body
       FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq
       WHERE d.endpoint_id = ? AND d.state = 'pending' AND d.next_attempt_at <= ? AND d.locked_by IS NULL
       ORDER BY d.next_attempt_at, d.id LIMIT ?`,
    );
    const lock = db.statement('UPDATE webhook_deliveries SET locked_by = ?, locked_at = ? WHERE id = ?');
    const taken: ClaimedDelivery[] = [];
    for (const endpointId of endpoints) {
      const n = room.room(endpointId);
      if (n <= 0) continue;
      const rows = due.all(endpointId, now, n) as Array<{ id: number; endpoint_id: string; event_seq: number; attempts: number; event_id: string; event_type: string; event_body: string }>;
      for (const d of rows) {
        lock.run(worker, now, d.id);
        room.take(endpointId);
        taken.push({ id: d.id, endpointId: d.endpoint_id, eventSeq: d.event_seq, attempts: d.attempts, event: { id: d.event_id, type: d.event_type, body: d.event_body } });
      }
    }
    return taken;
  });
}

/** Gives claimed deliveries back (to be claimed again by the next claim). */
export function unlockDeliveries(db: Db, ids: number[]): void {
  const st = db.statement('UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL WHERE id = ?');
  for (const id of ids) st.run(id);
}

export function releaseDeliveryClaims(db: Db): number {
  return db.statement('UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL WHERE locked_by IS NOT NULL').run().changes;
}

export function eventBySeq(db: Db, seq: number): { id: string; type: string; body: string; customerId: number } | undefined {
  const r = db.statement('SELECT id, type, body, customer_id FROM events WHERE seq = ?').get(seq) as { id: string; type: string; body: string; customer_id: number } | undefined;
  return r && { id: r.id, type: r.type, body: r.body, customerId: r.customer_id };
}

export function eventById(db: Db, id: string, customerId: number): { seq: number; id: string; type: string; body: string } | undefined {
  return db.statement('SELECT seq, id, type, body FROM events WHERE id = ? AND customer_id = ?').get(id, customerId) as
    | { seq: number; id: string; type: string; body: string }
    | undefined;
}

export interface AttemptRecord {
  endpointId: string;
  deliveryId: number | null;
  eventId: string;
  eventType: string;
  attempt: number;
  at: number;
  status: number | null;
  error: string | null;
  durationMs: number;
  response: string | null;
}

export function logAttempt(db: Db, a: AttemptRecord): void {
  db.statement(
    'INSERT INTO webhook_attempts (endpoint_id, delivery_id, event_id, event_type, attempt, at, status, error, duration_ms, response) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(a.endpointId, a.deliveryId, a.eventId, a.eventType, a.attempt, a.at, a.status, a.error, a.durationMs, a.response);
}

/** After an attempt: succeeded, failed for good, or pending again at `nextAt`. Unlocks the row. */
export function settleDelivery(db: Db, id: string | number, state: 'succeeded' | 'failed' | 'pending', attempts: number, nextAt: number | null, now: number): void {
  db.statement('UPDATE webhook_deliveries SET state = ?, attempts = ?, next_attempt_at = ?, locked_by = NULL, locked_at = NULL, updated_at = ? WHERE id = ?').run(state, attempts, nextAt, now, id);
}

/** A finished attempt and what it decided: the delivery's next state, and whether the endpoint is now disabled (410). */
export interface SettledAttempt {
  attempt: AttemptRecord;
  deliveryId: number;
  state: 'succeeded' | 'failed' | 'pending';
  nextAt: number | null;
  disableEndpoint: boolean;
}

/** Logs and settles a batch of attempts (the dispatcher's, through the group-commit writer). */
export function recordAttempts(db: Db, batch: SettledAttempt[], now: number): void {
  for (const s of batch) {
    logAttempt(db, s.attempt);
    // Standard Webhooks: 410 Gone means the receiver wants no more; disable the endpoint.
    if (s.disableEndpoint) disableEndpoint(db, s.attempt.endpointId, '410 Gone');
    settleDelivery(db, s.deliveryId, s.state, s.attempt.attempt, s.nextAt, now);
  }
}

export interface AttemptView {
  event_id: string;
  event_type: string;
  attempt: number;
  at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  response: string | null;
  delivery_state: string | null;
}

/** Recent attempts to an endpoint, newest first, paged by attempt id. */
export function listAttempts(db: Db, endpointId: string, limit: number, before?: number): Array<AttemptView & { cursor: number }> {
  const rows = db
    .statement(
      `SELECT a.id, a.event_id, a.event_type, a.attempt, a.at, a.status, a.error, a.duration_ms, a.response, d.state AS delivery_state
       FROM webhook_attempts a LEFT JOIN webhook_deliveries d ON d.id = a.delivery_id
       WHERE a.endpoint_id = ? AND a.id < ? ORDER BY a.id DESC LIMIT ?`,
    )
    .all(endpointId, before ?? Number.MAX_SAFE_INTEGER, limit) as Array<{
    id: number;
    event_id: string;
    event_type: string;
    attempt: number;
    at: number;
    status: number | null;
    error: string | null;
    duration_ms: number;
    response: string | null;
    delivery_state: string | null;
  }>;
  return rows.map((r) => ({
    cursor: r.id,
    event_id: r.event_id,
    event_type: r.event_type,
    attempt: r.attempt,
    at: new Date(r.at).toISOString(),
    status: r.status,
    error: r.error,
    duration_ms: r.duration_ms,
    response: r.response,
    delivery_state: r.delivery_state,
  }));
}
