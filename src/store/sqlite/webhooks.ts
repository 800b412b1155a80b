import { publicId } from '../../lib/ids.js';
import {
  type ClaimRoom,
  DELIVERIES_OF_MESSAGE,
  type Endpoint,
  type FanOutPos,
  type MessageHookDelivery,
  type OutboxEvent,
  type StoredDelivery,
} from '../model.js';
import type { WebhookStore } from '../store.js';
import {
  type ClaimedDeliveryRow,
  type EndpointRow,
  endpointColumns,
  endpointView,
  eventsColumn,
  mergeEndpoint,
  storedDeliveryView,
} from '../views.js';
import type { EndpointChanges } from '../webhook-store.js';
import { BOUND_LIMIT, type Db } from './db.js';
import { disableEndpoint, hasDelivery, listAttempts, logAttempt, settleDelivery } from './webhook-attempts.js';

export function createEndpoint(
  db: Db,
  input: { customerId: number; url: string; events: string[] | null; description: string; secret: string; now: number },
): Endpoint {
  const id = publicId('wh', 20);
  db.run(
    'INSERT INTO webhook_endpoints (id, customer_id, url, events, description, secret, enabled, created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)',
    id,
    input.customerId,
    input.url,
    eventsColumn(input.events),
    input.description,
    input.secret,
    input.now,
  );
  return getEndpoint(db, id)!;
}

export function getEndpoint(db: Db, id: string, customerId?: number): Endpoint | undefined {
  const r = db.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?', id);
  if (!r || (customerId !== undefined && r.customer_id !== customerId)) return undefined;
  return endpointView(r);
}

export function listEndpoints(db: Db, customerId?: number): Endpoint[] {
  const rows =
    customerId === undefined
      ? db.all<EndpointRow>('SELECT * FROM webhook_endpoints ORDER BY created_at DESC, id')
      : db.all<EndpointRow>(
          'SELECT * FROM webhook_endpoints WHERE customer_id = ? ORDER BY created_at DESC, id',
          customerId,
        );
  return rows.map(endpointView);
}

export function deleteEndpoint(db: Db, id: string): void {
  db.run('DELETE FROM webhook_endpoints WHERE id = ?', id);
}

export function enableEndpoint(db: Db, id: string): void {
  db.run('UPDATE webhook_endpoints SET enabled = 1, disabled_reason = NULL WHERE id = ?', id);
}

/** The endpoint with `changes` applied, written whole (webhook-store.ts); undefined when there is none. */
export function updateEndpoint(db: Db, id: string, changes: EndpointChanges): Endpoint | undefined {
  return db.tx(() => {
    const e = getEndpoint(db, id);
    if (!e) return undefined;
    const next = mergeEndpoint(e, changes);
    db.run(
      'UPDATE webhook_endpoints SET url = ?, events = ?, description = ?, enabled = ?, disabled_reason = ? WHERE id = ?',
      ...endpointColumns(next),
      id,
    );
    return getEndpoint(db, id);
  });
}

export function rotateSecret(db: Db, id: string, secret: string, previousUntil: number): Endpoint | undefined {
  db.run(
    'UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = ?, secret = ? WHERE id = ?',
    previousUntil,
    secret,
    id,
  );
  return getEndpoint(db, id);
}

/** The webhook deliveries of one message's events: which endpoint, how far each got, its last answer. */
export function deliveriesOfMessage(db: Db, messageRowId: number): MessageHookDelivery[] {
  return db.all<MessageHookDelivery>(DELIVERIES_OF_MESSAGE.replaceAll(/\$\d/g, '?'), messageRowId);
}

const atSeq = (seq: number): FanOutPos => ({ x: 0, seq });

/**
 * The fan-out cursor: every event up to it has its delivery rows, or needs none. The dispatcher
 * fans events out in memory and moves the cursor only in the transactions that store those
 * deliveries (recordAttempts), so a crash loses none: what is past the cursor is fanned out again.
 */
export function fanOutCursor(db: Db): FanOutPos {
  return atSeq(
    Number(db.get<{ value: string }>("SELECT value FROM settings WHERE name = 'webhook_fanout_seq'")!.value),
  );
}

/**
 * Events after `seq`, in order, at most `limit` (a read: no lock). Rows come as arrays: better-sqlite3
 * builds a row object property by property through V8's slow path, an array at once (a row of the
 * outbox: ~1.4-1.9 µs as an object, ~0.9 µs as an array made into an object here).
 */
export function eventsAfter(db: Db, after: FanOutPos, limit: number): OutboxEvent[] {
  const rows = db
    .statement(
      `SELECT seq, id, customer_id, type, body, created_at FROM events WHERE seq > ? ORDER BY seq ${BOUND_LIMIT}`,
    )
    .raw(true)
    .all(after.seq, limit) as Array<[number, string, number, string, string, number]>;
  return rows.map((r) => ({
    pos: atSeq(r[0]),
    seq: r[0],
    id: r[1],
    customerId: r[2],
    type: r[3],
    body: r[4],
    createdAt: r[5],
  }));
}

/** The last event after `after` with a delivery row: after a crash, rows past the cursor can exist up to it. */
export function lastFannedOut(db: Db, after: FanOutPos): FanOutPos {
  const seq =
    db.get<{ seq: number | null }>("SELECT MAX(event_seq) AS seq FROM webhook_deliveries WHERE kind = 'event'")!.seq ??
    0;
  return seq > after.seq ? atSeq(seq) : after;
}

/** The ids of the enabled endpoints (all customers). */
export function enabledEndpointIds(db: Db): string[] {
  return db.all<{ id: string }>('SELECT id FROM webhook_endpoints WHERE enabled = 1').map((r) => r.id);
}

/**
 * An endpoint's deliveries due at a time and not claimed (parameters: endpoint id, time). The
 * state and lock conditions are the due index's own (migration 5), so SQLite can use it.
 */
const DUE = "d.endpoint_id = ? AND d.state = 'pending' AND d.locked_by IS NULL AND d.next_attempt_at <= ?";

/** Whether any of these endpoints has a pending delivery due (a read, through the due index). */
export function hasDue(db: Db, endpointIds: string[], now: number): boolean {
  return endpointIds.some(
    (id) => db.get(`SELECT 1 FROM webhook_deliveries d WHERE ${DUE} LIMIT 1`, id, now) !== undefined,
  );
}

/**
 * Claims due deliveries in one transaction, endpoint by endpoint through the (endpoint_id,
 * next_attempt_at) index, each endpoint within its `room` (the claimer's quota less what it
 * already holds), so a dead endpoint's backlog cannot crowd out the others.
 */
export function claimDeliveries(db: Db, worker: string, now: number, room: ClaimRoom): StoredDelivery[] {
  return db.tx(() => {
    const endpoints = enabledEndpointIds(db);
    const taken: StoredDelivery[] = [];
    for (const endpointId of endpoints) {
      const n = room.room(endpointId);
      if (n <= 0) continue;
      const rows = db.all<ClaimedDeliveryRow>(
        `SELECT d.id, d.endpoint_id, d.event_seq, d.attempts, e.id AS event_id, e.type AS event_type, e.body AS event_body
         FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq
         WHERE ${DUE}
         ORDER BY d.next_attempt_at, d.id ${BOUND_LIMIT}`,
        endpointId,
        now,
        n,
      );
      for (const d of rows) {
        db.run('UPDATE webhook_deliveries SET locked_by = ?, locked_at = ? WHERE id = ?', worker, now, d.id);
        room.take(endpointId);
        taken.push(storedDeliveryView(d));
      }
    }
    return taken;
  });
}

/** Gives claimed deliveries back (to be claimed again by the next claim). */
export function unlockDeliveries(db: Db, ids: number[]): void {
  for (const id of ids) db.run('UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL WHERE id = ?', id);
}

export function releaseDeliveryClaims(db: Db): number {
  return db.run('UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL WHERE locked_by IS NOT NULL').changes;
}

export function eventBySeq(
  db: Db,
  seq: number,
): { id: string; type: string; body: string; customerId: number } | undefined {
  const r = db.get<{ id: string; type: string; body: string; customer_id: number }>(
    'SELECT id, type, body, customer_id FROM events WHERE seq = ?',
    seq,
  );
  return r && { id: r.id, type: r.type, body: r.body, customerId: r.customer_id };
}

export function eventById(
  db: Db,
  id: string,
  customerId: number,
): { seq: number; id: string; type: string; body: string } | undefined {
  return db.get<{ seq: number; id: string; type: string; body: string }>(
    'SELECT seq, id, type, body FROM events WHERE id = ? AND customer_id = ?',
    id,
    customerId,
  );
}

/** A replay's delivery row, held by the replay itself (never claimed by the dispatcher); returns its id. */
export function startReplay(db: Db, endpointId: string, eventSeq: number, now: number): number {
  const r = db.run(
    "INSERT INTO webhook_deliveries (endpoint_id, event_seq, kind, state, attempts, next_attempt_at, locked_by, locked_at, created_at, updated_at) VALUES (?, ?, 'replay', 'pending', 0, NULL, 'replay', ?, ?, ?)",
    endpointId,
    eventSeq,
    now,
    now,
    now,
  );
  return Number(r.lastInsertRowid);
}

/**
 * Webhook endpoints, their deliveries and the fan-out on SQLite. Attempts arrive many at a time:
 * recording them is the write given (store/sqlite/index.ts: the writer thread's group commit when
 * the daemon has one).
 */
export function sqliteWebhooks(db: Db, writes: Pick<WebhookStore, 'recordAttempts'>): WebhookStore {
  const tx = <T>(fn: () => T): Promise<T> => Promise.resolve(db.tx(fn));
  return {
    createEndpoint: async (input) => createEndpoint(db, input),
    getEndpoint: async (id, customerId) => getEndpoint(db, id, customerId),
    listEndpoints: async (customerId) => listEndpoints(db, customerId),
    deleteEndpoint: async (id) => deleteEndpoint(db, id),
    disableEndpoint: async (id, reason) => disableEndpoint(db, id, reason),
    enableEndpoint: async (id) => enableEndpoint(db, id),
    updateEndpoint: async (id, changes) => updateEndpoint(db, id, changes),
    rotateSecret: async (id, secret, until) => rotateSecret(db, id, secret, until),
    eventById: async (id, customerId) => eventById(db, id, customerId),
    listAttempts: async (endpointId, limit, before) => listAttempts(db, endpointId, limit, before),
    logAttempt: async (a) => logAttempt(db, a),
    startReplay: async (endpointId, eventSeq, now) => startReplay(db, endpointId, eventSeq, now),
    finishReplay: (a, deliveryId, state, now) =>
      tx(() => {
        logAttempt(db, a, deliveryId);
        settleDelivery(db, deliveryId, state, 1, null, now);
      }),
    enabledEndpointIds: async () => enabledEndpointIds(db),
    hasDue: async (endpointIds, now) => hasDue(db, endpointIds, now),
    claim: async (worker, now, room, release, wait) => {
      const work = () => {
        unlockDeliveries(db, release);
        return claimDeliveries(db, worker, now, room);
      };
      // Tried, not waited for, on the event loop's connection unless asked: waiting for the
      // writer thread's lock would block the loop in SQLite's busy handler.
      return wait ? db.tx(work) : db.tryTx(work)?.value;
    },
    unlock: (ids) => tx(() => unlockDeliveries(db, ids)),
    settleDelivery: async (id, state, attempts, nextAt, now) => settleDelivery(db, id, state, attempts, nextAt, now),
    recordAttempts: writes.recordAttempts,
    // One process holds the file (store/open.ts): it is the only fan-out there can be.
    leadFanOut: async () => 1,
    resignFanOut: async () => undefined,
    releaseAllClaims: async () => releaseDeliveryClaims(db),
    fanOutCursor: async () => fanOutCursor(db),
    lastFannedOut: async (after) => lastFannedOut(db, after),
    eventsAfter: async (pos, limit) => eventsAfter(db, pos, limit),
    hasDelivery: async (eventSeq, endpointId) => hasDelivery(db, eventSeq, endpointId),
  };
}
