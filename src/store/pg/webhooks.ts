import { publicId } from '../../lib/ids.js';
import type { AttemptView, ClaimRoom, Endpoint, FanOutPos, OutboxEvent, StoredDelivery } from '../model.js';
import type { WebhookStore } from '../store.js';
import {
  type AttemptRow,
  attemptView,
  type ClaimedDeliveryRow,
  type EndpointRow,
  endpointColumns,
  endpointView,
  eventsColumn,
  mergeEndpoint,
  storedDeliveryView,
} from '../views.js';
import type { EndpointChanges } from '../webhook-store.js';
import type { PgDb, Q } from './db.js';
import { FANOUT_LEASE, logAttempts, recordAttempts } from './webhook-attempts.js';

/**
 * Webhook endpoints, deliveries and the outbox on PostgreSQL.
 *
 * The fan-out's order: events are read by (writing transaction, seq), and only those of
 * transactions older than the oldest still running (`pg_snapshot_xmin`). Sequence numbers are
 * taken when a row is inserted and transactions commit in any order, so a reader that moved a
 * cursor past seq 2 while seq 1's transaction was still open would never see seq 1; every
 * transaction id below the snapshot's xmin is finished, and every later event gets one at or
 * above it (test/unit/store/outbox-order.test.ts reproduces the lost event of the seq cursor).
 */

const parsePos = (v: string): FanOutPos => {
  const [x, seq] = v.split(':');
  return { x: Number(x), seq: Number(seq) };
};

/**
 * Takes the lease when it is free or expired, renews it when `holder` has it; on the database's
 * clock, so the nodes' own clocks do not matter. The epoch moves when the holder changes.
 */
const LEAD = `
INSERT INTO leader_leases AS l (name, holder, epoch, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
  epoch = l.epoch + CASE WHEN l.holder = excluded.holder THEN 0 ELSE 1 END
 WHERE l.holder = excluded.holder OR l.expires_at < now()
RETURNING epoch`;

/** Due deliveries, claimed endpoint by endpoint within each one's room, in one statement; locked rows are skipped, never waited for. */
const CLAIM = `
WITH room AS (SELECT * FROM unnest($1::text[], $2::int[]) AS x(endpoint_id, n)),
picked AS MATERIALIZED (
  SELECT p.id FROM room, LATERAL (
    SELECT d.id FROM webhook_deliveries d
     WHERE d.endpoint_id = room.endpoint_id AND d.state = 'pending' AND d.locked_by IS NULL AND d.next_attempt_at <= $4
     ORDER BY d.next_attempt_at, d.id LIMIT room.n FOR UPDATE SKIP LOCKED) p),
upd AS (
  UPDATE webhook_deliveries d SET locked_by = $3, locked_at = $4 FROM picked WHERE d.id = picked.id
  RETURNING d.id, d.endpoint_id, d.event_seq, d.attempts, d.next_attempt_at)
SELECT upd.id, upd.endpoint_id, upd.event_seq, upd.attempts, e.id AS event_id, e.type AS event_type, e.body AS event_body
  FROM upd JOIN events e ON e.seq = upd.event_seq ORDER BY upd.next_attempt_at, upd.id`;

/** Webhooks on PostgreSQL: the endpoints (with test events and replays), the dispatcher's claims, the fan-out. */
export function pgWebhooks(db: PgDb): WebhookStore {
  return { ...pgEndpoints(db), ...pgDispatch(db), ...pgFanOut(db) };
}

type Endpoints = Omit<WebhookStore, keyof ReturnType<typeof pgDispatch> | keyof ReturnType<typeof pgFanOut>>;

/** Endpoints, their events and attempts as the API and the dashboard read them; test events and replays. */
function pgEndpoints(db: PgDb): Endpoints {
  return {
    createEndpoint: (input) => createEndpoint(db, input),
    getEndpoint: async (id, customerId) => {
      const r = await db.row<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = $1', [id]);
      return r && (customerId === undefined || r.customer_id === customerId) ? endpointView(r) : undefined;
    },
    listEndpoints: async (customerId) =>
      (
        await db.rows<EndpointRow>(
          'SELECT * FROM webhook_endpoints WHERE ($1::bigint IS NULL OR customer_id = $1) ORDER BY created_at DESC, id COLLATE "C"',
          [customerId ?? null],
        )
      ).map(endpointView),
    deleteEndpoint: async (id) => void (await db.run('DELETE FROM webhook_endpoints WHERE id = $1', [id])),
    disableEndpoint: async (id, reason) =>
      void (await db.run('UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $1 WHERE id = $2', [reason, id])),
    enableEndpoint: async (id) =>
      void (await db.run('UPDATE webhook_endpoints SET enabled = 1, disabled_reason = NULL WHERE id = $1', [id])),
    updateEndpoint: (id, changes) => updateEndpoint(db, id, changes),
    rotateSecret: async (id, secret, until) => {
      const r = await db.row<EndpointRow>(
        'UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = $1, secret = $2 WHERE id = $3 RETURNING *',
        [until, secret, id],
      );
      return r ? endpointView(r) : undefined;
    },
    eventById: (id, customerId) =>
      db.row('SELECT seq, id, type, body FROM events WHERE id = $1 AND customer_id = $2', [id, customerId]),
    listAttempts: (endpointId, limit, before) => listAttempts(db, endpointId, limit, before),
    logAttempt: async (a) => void (await logAttempts(db, [{ a, deliveryId: a.deliveryId }])),
    startReplay: async (endpointId, eventSeq, now) =>
      (await db.row<{ id: number }>(
        `INSERT INTO webhook_deliveries (endpoint_id, event_seq, kind, state, attempts, next_attempt_at, locked_by, locked_at, created_at, updated_at)
         VALUES ($1, $2, 'replay', 'pending', 0, NULL, 'replay', $3, $3, $3) RETURNING id`,
        [endpointId, eventSeq, now],
      ))!.id,
    finishReplay: (a, deliveryId, state, now) =>
      db.tx(async (q) => {
        await logAttempts(q, [{ a, deliveryId }]);
        await q.run(
          'UPDATE webhook_deliveries SET state = $1, attempts = 1, next_attempt_at = NULL, locked_by = NULL, locked_at = NULL, updated_at = $2 WHERE id = $3',
          [state, now, deliveryId],
        );
      }),
  };
}

/** The dispatcher's: what is due, claims and their release, attempts recorded. */
function pgDispatch(db: PgDb) {
  return {
    enabledEndpointIds: async () =>
      (await db.rows<{ id: string }>('SELECT id FROM webhook_endpoints WHERE enabled = 1')).map((r) => r.id),
    hasDue: async (endpointIds, now) =>
      endpointIds.length > 0 &&
      (await db.row(
        "SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = ANY($1::text[]) AND d.state = 'pending' AND d.locked_by IS NULL AND d.next_attempt_at <= $2 LIMIT 1",
        [endpointIds, now],
      )) !== undefined,
    claim: (worker, now, room, release) => db.tx((q) => claim(q, worker, now, room, release)),
    unlock: async (ids) => void (await unlock(db, ids)),
    settleDelivery: async (id, state, attempts, nextAt, now) =>
      void (await db.run(
        'UPDATE webhook_deliveries SET state = $1, attempts = $2, next_attempt_at = $3, locked_by = NULL, locked_at = NULL, updated_at = $4 WHERE id = $5',
        [state, attempts, nextAt, now, id],
      )),
    recordAttempts: (batch) => db.tx((q) => recordAttempts(q, batch)),
    releaseAllClaims: () =>
      db.run('UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL WHERE locked_by IS NOT NULL'),
  } satisfies Partial<WebhookStore>;
}

/** The fan-out's: its lease, its cursor, events in fan-out order. */
function pgFanOut(db: PgDb) {
  return {
    leadFanOut: async (holder, ttlMs) =>
      (await db.row<{ epoch: number }>(LEAD, [FANOUT_LEASE, holder, ttlMs]))?.epoch ?? null,
    resignFanOut: async (holder) =>
      void (await db.run(
        "UPDATE leader_leases SET expires_at = now() - interval '1 millisecond' WHERE name = $1 AND holder = $2",
        [FANOUT_LEASE, holder],
      )),
    fanOutCursor: async () =>
      parsePos(
        (await db.row<{ value: string }>("SELECT value FROM settings WHERE name = 'webhook_fanout_pos'"))!.value,
      ),
    lastFannedOut: (after) => lastFannedOut(db, after),
    eventsAfter: (pos, limit) => eventsAfter(db, pos, limit),
    hasDelivery: async (eventSeq, endpointId) =>
      (await db.row("SELECT 1 FROM webhook_deliveries WHERE event_seq = $1 AND endpoint_id = $2 AND kind = 'event'", [
        eventSeq,
        endpointId,
      ])) !== undefined,
  } satisfies Partial<WebhookStore>;
}

const unlock = (q: Q, ids: number[]) =>
  ids.length
    ? q.run('UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL WHERE id = ANY($1::bigint[])', [ids])
    : Promise.resolve(0);

async function createEndpoint(db: PgDb, input: Parameters<WebhookStore['createEndpoint']>[0]): Promise<Endpoint> {
  const id = publicId('wh', 20);
  const r = await db.row<EndpointRow>(
    'INSERT INTO webhook_endpoints (id, customer_id, url, events, description, secret, enabled, created_at) VALUES ($1, $2, $3, $4, $5, $6, 1, $7) RETURNING *',
    [id, input.customerId, input.url, eventsColumn(input.events), input.description, input.secret, input.now],
  );
  return endpointView(r!);
}

/** The endpoint with `changes` applied, read and written back whole under its row lock. */
function updateEndpoint(db: PgDb, id: string, changes: EndpointChanges): Promise<Endpoint | undefined> {
  return db.tx(async (q) => {
    const r = await q.row<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [id]);
    if (!r) return undefined;
    const next = mergeEndpoint(endpointView(r), changes);
    const w = await q.row<EndpointRow>(
      'UPDATE webhook_endpoints SET url = $1, events = $2, description = $3, enabled = $4, disabled_reason = $5 WHERE id = $6 RETURNING *',
      [...endpointColumns(next), id],
    );
    return endpointView(w!);
  });
}

async function listAttempts(
  db: PgDb,
  endpointId: string,
  limit: number,
  before: number | undefined,
): Promise<Array<AttemptView & { cursor: number }>> {
  const rows = await db.rows<AttemptRow>(
    `SELECT a.id, a.event_id, a.event_type, a.attempt, a.at, a.status, a.error, a.duration_ms, a.response, d.state AS delivery_state, d.kind AS delivery_kind
     FROM webhook_attempts a LEFT JOIN webhook_deliveries d ON d.id = a.delivery_id
     WHERE a.endpoint_id = $1 AND a.id < $2 ORDER BY a.id DESC LIMIT $3`,
    [endpointId, before ?? Number.MAX_SAFE_INTEGER, limit],
  );
  return rows.map(attemptView);
}

/** Claims due deliveries of the enabled endpoints with room, each endpoint's earliest first, after releasing `release`. */
async function claim(q: Q, worker: string, now: number, room: ClaimRoom, release: number[]): Promise<StoredDelivery[]> {
  await unlock(q, release);
  const endpoints = (await q.rows<{ id: string }>('SELECT id FROM webhook_endpoints WHERE enabled = 1'))
    .map((r) => r.id)
    .filter((id) => room.room(id) > 0);
  if (endpoints.length === 0) return [];
  const rows = await q.rows<ClaimedDeliveryRow>(CLAIM, [endpoints, endpoints.map((id) => room.room(id)), worker, now]);
  return rows.map((d) => {
    room.take(d.endpoint_id);
    return storedDeliveryView(d);
  });
}

async function lastFannedOut(db: PgDb, after: FanOutPos): Promise<FanOutPos> {
  const r = await db.row<{ x: number; seq: number }>(
    `SELECT e.txid::text::bigint AS x, e.seq FROM events e
      WHERE (e.txid, e.seq) > ($1::text::xid8, $2::bigint)
        AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = e.seq AND d.kind = 'event')
      ORDER BY e.txid DESC, e.seq DESC LIMIT 1`,
    [String(after.x), after.seq],
  );
  return r ?? after;
}

async function eventsAfter(db: PgDb, pos: FanOutPos, limit: number): Promise<OutboxEvent[]> {
  return (
    await db.rows<{
      x: number;
      seq: number;
      id: string;
      customer_id: number;
      type: string;
      body: string;
      created_at: number;
    }>(
      `SELECT txid::text::bigint AS x, seq, id, customer_id, type, body, created_at FROM events
        WHERE (txid, seq) > ($1::text::xid8, $2::bigint) AND txid < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY txid, seq LIMIT $3`,
      [String(pos.x), pos.seq, limit],
    )
  ).map(
    (r): OutboxEvent => ({
      pos: { x: r.x, seq: r.seq },
      seq: r.seq,
      id: r.id,
      customerId: r.customer_id,
      type: r.type,
      body: r.body,
      createdAt: r.created_at,
    }),
  );
}
