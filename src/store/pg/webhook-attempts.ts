import type { AttemptBatch, AttemptRecord } from '../model.js';
import type { Q } from './db.js';

/** The fan-out's lease (leader_leases): one node at a time fans new events out. */
export const FANOUT_LEASE = 'webhook_fanout';

type Settled = AttemptBatch['batch'];

/**
 * Logs and settles a batch of attempts on PostgreSQL: the rows of deliveries fanned out in memory
 * are created (or, fanned out again after a restart, their rows settled: one upsert), stored ones
 * settled, pending rows written, and the fan-out cursor moved forward, never back. Attempts to an
 * endpoint deleted meanwhile are dropped with their delivery. False: the batch's epoch no longer
 * holds the fan-out's lease; only the attempts and the stored deliveries were written.
 */
export async function recordAttempts(q: Q, input: AttemptBatch): Promise<boolean> {
  const { now } = input;
  const refused = await fencedOut(q, input);
  const alive = await liveEndpoints(q, [
    ...input.batch.map((s) => s.attempt.endpointId),
    ...input.pending.map((p) => p.endpointId),
  ]);
  const batch = input.batch.filter((s) => alive.has(s.attempt.endpointId));
  const stored = batch.filter((s) => s.deliveryId !== null);
  if (refused) {
    // The requests were made and are logged; their rows, the pending ones and the cursor are the
    // new leader's to write (it fans these events out again: at-least-once).
    if (stored.length) await settleStored(q, stored, now);
    await logAttempts(
      q,
      batch.map((s) => ({ a: s.attempt, deliveryId: s.deliveryId })),
    );
    return false;
  }
  const created = await createFresh(
    q,
    batch.filter((s) => s.deliveryId === null),
    now,
  );
  if (stored.length) await settleStored(q, stored, now);
  await logAttempts(
    q,
    batch.map((s) => ({
      a: s.attempt,
      deliveryId: s.deliveryId ?? created.get(`${s.eventSeq} ${s.attempt.endpointId}`) ?? null,
    })),
  );
  await disableGone(q, batch);
  await writePending(
    q,
    input.pending.filter((p) => alive.has(p.endpointId)),
    now,
  );
  if (input.cursor !== null) await moveCursor(q, input.cursor);
  return true;
}

/**
 * Whether the batch's fan-out writes are refused. Fenced: they are made only while the batch's
 * epoch holds the lease. The row is locked FOR SHARE until commit, so a node taking the lease
 * over waits for this batch and then reads the cursor it leaves; a batch that starts after the
 * takeover finds no row.
 */
async function fencedOut(q: Q, input: AttemptBatch): Promise<boolean> {
  const fansOut = input.cursor !== null || input.pending.length > 0 || input.batch.some((s) => s.deliveryId === null);
  if (!fansOut || input.epoch === undefined) return false;
  const row = await q.row('SELECT 1 FROM leader_leases WHERE name = $1 AND epoch = $2 FOR SHARE', [
    FANOUT_LEASE,
    input.epoch,
  ]);
  return row === undefined;
}

/** Which of these endpoints still exist. */
async function liveEndpoints(q: Q, ids: string[]): Promise<Set<string>> {
  const rows = await q.rows<{ id: string }>('SELECT id FROM webhook_endpoints WHERE id = ANY($1::text[])', [
    [...new Set(ids)],
  ]);
  return new Set(rows.map((r) => r.id));
}

/** The rows of deliveries fanned out in memory, by "event_seq endpoint_id" (an upsert: fanned out again after a restart, the row is settled). */
async function createFresh(q: Q, fresh: Settled, now: number): Promise<Map<string, number>> {
  const created = new Map<string, number>();
  if (fresh.length === 0) return created;
  const rows = await q.rows<{ id: number; event_seq: number; endpoint_id: string }>(
    `INSERT INTO webhook_deliveries (endpoint_id, event_seq, kind, state, attempts, next_attempt_at, created_at, updated_at)
     SELECT e, s, 'event', st, n, nx, $6, $6 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::bigint[]) AS x(e, s, st, n, nx)
     ON CONFLICT (event_seq, endpoint_id) WHERE kind = 'event' DO UPDATE SET state = excluded.state, attempts = excluded.attempts,
       next_attempt_at = excluded.next_attempt_at, locked_by = NULL, locked_at = NULL, updated_at = excluded.updated_at
     RETURNING id, event_seq, endpoint_id`,
    [
      fresh.map((s) => s.attempt.endpointId),
      fresh.map((s) => s.eventSeq),
      fresh.map((s) => s.state),
      fresh.map((s) => s.attempt.attempt),
      fresh.map((s) => s.nextAt),
      now,
    ],
  );
  for (const r of rows) created.set(`${r.event_seq} ${r.endpoint_id}`, r.id);
  return created;
}

function settleStored(q: Q, stored: Settled, now: number): Promise<number> {
  return q.run(
    `UPDATE webhook_deliveries d SET state = x.st, attempts = x.n, next_attempt_at = x.nx, locked_by = NULL, locked_at = NULL, updated_at = $5
     FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[]) AS x(id, st, n, nx) WHERE d.id = x.id`,
    [
      stored.map((s) => s.deliveryId),
      stored.map((s) => s.state),
      stored.map((s) => s.attempt.attempt),
      stored.map((s) => s.nextAt),
      now,
    ],
  );
}

/** Standard Webhooks: 410 Gone means the receiver wants no more; the endpoint is disabled. */
async function disableGone(q: Q, batch: Settled): Promise<void> {
  const gone = [...new Set(batch.filter((s) => s.disableEndpoint).map((s) => s.attempt.endpointId))];
  if (gone.length)
    await q.run("UPDATE webhook_endpoints SET enabled = 0, disabled_reason = '410 Gone' WHERE id = ANY($1::text[])", [
      gone,
    ]);
}

/** Deliveries fanned out but not attempted in this batch: pending rows. */
async function writePending(q: Q, pending: AttemptBatch['pending'], now: number): Promise<void> {
  if (pending.length)
    await q.run(
      `INSERT INTO webhook_deliveries (endpoint_id, event_seq, kind, state, attempts, next_attempt_at, created_at, updated_at)
       SELECT e, s, 'event', 'pending', 0, $3, $3, $3 FROM unnest($1::text[], $2::bigint[]) AS x(e, s) ON CONFLICT DO NOTHING`,
      [pending.map((p) => p.endpointId), pending.map((p) => p.eventSeq), now],
    );
}

/** The fan-out cursor moved forward, never back. */
async function moveCursor(q: Q, cursor: NonNullable<AttemptBatch['cursor']>): Promise<void> {
  await q.run(
    `UPDATE settings SET value = $1 WHERE name = 'webhook_fanout_pos'
       AND (split_part(value, ':', 1)::bigint, split_part(value, ':', 2)::bigint) < ($2::bigint, $3::bigint)`,
    [`${cursor.x}:${cursor.seq}`, cursor.x, cursor.seq],
  );
}

/** The attempts' log rows, in one statement. */
export function logAttempts(q: Q, list: Array<{ a: AttemptRecord; deliveryId: number | null }>): Promise<number> {
  if (list.length === 0) return Promise.resolve(0);
  const col = <T>(f: (x: { a: AttemptRecord; deliveryId: number | null }) => T) => list.map(f);
  return q.run(
    `INSERT INTO webhook_attempts (endpoint_id, delivery_id, event_id, event_type, attempt, at, status, error, duration_ms, response)
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::int[], $8::text[], $9::int[], $10::text[])`,
    [
      col((x) => x.a.endpointId),
      col((x) => x.deliveryId),
      col((x) => x.a.eventId),
      col((x) => x.a.eventType),
      col((x) => x.a.attempt),
      col((x) => x.a.at),
      col((x) => x.a.status),
      col((x) => x.a.error),
      col((x) => Math.round(x.a.durationMs)),
      col((x) => x.a.response),
    ],
  );
}
