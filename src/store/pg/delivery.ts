import { CLUSTER_THROTTLE } from '../../domain/destinations.js';
import type { SandboxStep } from '../../domain/sandbox.js';
import { type OutcomePolicy, outcomeTransition } from '../../domain/transitions.js';
import { type Claimed, type DestinationThrottle, type QueuedMessage, sandboxTransition } from '../model.js';
import type { DeliveryStore, GroupRecord, OwnUse } from '../store.js';
import {
  type ClaimedRow,
  claimedView,
  QUEUED_MESSAGE_COLUMNS,
  type QueuedMessageRow,
  queuedMessage,
  THROTTLE_COLUMNS,
  type ThrottleRow,
  throttleView,
} from '../views.js';
import type { PgDb, Q } from './db.js';
import { heldDestinations, holdClaimed, noteDestination, retriedAt } from './queue-ops.js';
import { applyTransitions, type Step } from './transitions.js';

/**
 * The delivery queue on PostgreSQL. A claim is one statement: the due recipients, earliest
 * first, read through the partial due index and locked with SKIP LOCKED (two claimers never wait
 * for each other, nor take the same row), their claims inserted (ON CONFLICT DO NOTHING: a
 * claimer whose snapshot predates another's committed claim skips it). The recipient rows are not
 * written until the outcome, as on SQLite; a group's outcomes are one transaction of a few
 * set-wise statements. A paused customer's recipients are not claimed (its queue is held without
 * its rows being written; expiry is decided only at an attempt, so none expires while paused).
 */

const CLAIM = `
WITH picked AS MATERIALIZED (
  SELECT r.id FROM recipients r
   WHERE r.state IN ('queued', 'deferred') AND r.next_attempt_at <= $2
     AND NOT EXISTS (SELECT 1 FROM recipient_claims c WHERE c.recipient_id = r.id)
     AND NOT EXISTS (SELECT 1 FROM customer_reputation p WHERE p.customer_id = r.customer_id AND p.paused_at IS NOT NULL)
   ORDER BY r.next_attempt_at LIMIT $3
   FOR NO KEY UPDATE OF r SKIP LOCKED),
claimed AS (
  INSERT INTO recipient_claims (recipient_id, worker, claimed_at)
  SELECT id, $1, $2 FROM picked ON CONFLICT (recipient_id) DO NOTHING RETURNING recipient_id)
SELECT r.id, r.message_id, r.address, r.domain, r.attempts, r.source_ip FROM recipients r JOIN claimed c ON c.recipient_id = r.id ORDER BY r.next_attempt_at, r.id`;

export async function loadMessages(q: Q, ids: number[]): Promise<Map<number, QueuedMessage>> {
  const rows = await q.rows<QueuedMessageRow>(
    `SELECT ${QUEUED_MESSAGE_COLUMNS} FROM messages WHERE id = ANY($1::bigint[])`,
    [[...new Set(ids)]],
  );
  return new Map(rows.map((m) => [m.id, queuedMessage(m)]));
}

/** A recipient (`messages.id` in the enclosing statement) may still be sent to. */
const UNFINISHED =
  "EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state IN ('queued', 'deferred'))";

async function postpone(q: Q, items: ReadonlyArray<{ id: number; until: number }>): Promise<void> {
  if (items.length === 0) return;
  const ids = items.map((i) => i.id);
  await q.run(
    'UPDATE recipients r SET next_attempt_at = x.until FROM unnest($1::bigint[], $2::bigint[]) AS x(id, until) WHERE r.id = x.id AND r.next_attempt_at < x.until',
    [ids, items.map((i) => i.until)],
  );
  await q.run('DELETE FROM recipient_claims WHERE recipient_id = ANY($1::bigint[])', [ids]);
}

async function record(q: Q, g: GroupRecord): Promise<void> {
  await applyTransitions(
    q,
    g.results.map(({ message, recipient, outcome }) => ({
      m: message,
      r: recipient,
      t: outcomeTransition(message, recipient, outcome, g.policy, g.now),
    })),
    g.now,
  );
  // After the outcomes: a composed copy is kept only while a recipient of it may still need it;
  // the copies of messages now finished (most: one recipient, delivered) are not even sent.
  if (g.composed.size > 0) {
    const ids = [...g.composed.keys()];
    const unfinished = new Set(
      (
        await q.rows<{ id: number }>(`SELECT m.id FROM messages m WHERE m.id = ANY($1::bigint[]) AND ${UNFINISHED}`, [
          ids,
        ])
      ).map((r) => r.id),
    );
    const raws = [...g.composed.values()];
    await q.run(
      `UPDATE messages m SET size = CASE WHEN m.raw IS NULL THEN x.len ELSE m.size END, raw = CASE WHEN x.raw IS NOT NULL THEN coalesce(m.raw, x.raw) END
       FROM unnest($1::bigint[], $2::int[], $3::bytea[]) AS x(id, len, raw) WHERE m.id = x.id`,
      [ids, raws.map((r) => r.length), ids.map((id, i) => (unfinished.has(id) ? raws[i]! : null))],
    );
  }
  const done = [...new Set(g.results.map((r) => r.message.id))].filter((id) => !g.composed.has(id));
  if (done.length)
    await q.run(
      `UPDATE messages m SET raw = NULL WHERE m.id = ANY($1::bigint[]) AND m.raw IS NOT NULL AND NOT ${UNFINISHED}`,
      [done],
    );
  await postpone(q, g.postpone);
}

function saveThrottle(q: Q, t: DestinationThrottle, now: number, holder: string): Promise<number> {
  return q.run(
    `INSERT INTO destination_throttles (destination, holder, connections, strikes, paused_until, reason, since, updated_at) VALUES ($1, $8, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (destination, holder) DO UPDATE SET connections = excluded.connections, strikes = excluded.strikes, paused_until = excluded.paused_until,
       reason = excluded.reason, since = excluded.since, updated_at = excluded.updated_at`,
    [t.destination, t.connections, t.strikes, t.pausedUntil, JSON.stringify(t.reason), t.since, now, holder],
  );
}

function publishUse(q: Q, destination: string, node: string, use: OwnUse): Promise<number> {
  return q.run(
    `INSERT INTO destination_use (destination, node, open, minute, started, seen_at) VALUES ($1, $2, $3, $4, $5, now())
     ON CONFLICT (destination, node) DO UPDATE SET open = excluded.open, minute = excluded.minute, started = excluded.started, seen_at = excluded.seen_at`,
    [destination, node, use.open, use.minute, use.started],
  );
}

/** Recipients that already have their complaint recorded (one email.complained per recipient). */
export async function complained(q: Q, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  // The rows locked first: two nodes reading one complaint at once record it once.
  await q.run('SELECT 1 FROM recipients WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE', [ids]);
  const rows = await q.rows<{ recipient_id: number }>(
    "SELECT DISTINCT recipient_id FROM events WHERE recipient_id = ANY($1::bigint[]) AND type = 'email.complained'",
    [ids],
  );
  return new Set(rows.map((r) => r.recipient_id));
}

/** A sandbox key's simulated steps, written as their transitions (model/queue.ts, sandboxTransition), set-wise. */
async function recordSandbox(
  q: Q,
  items: Array<{ message: QueuedMessage; recipient: Claimed; steps: SandboxStep[] }>,
  policy: OutcomePolicy,
  now: number,
): Promise<void> {
  const withComplaint = items.filter((i) => i.steps.some((s) => s.kind === 'complaint')).map((i) => i.recipient.id);
  const seen = await complained(q, withComplaint);
  const steps: Step[] = [];
  for (const { message: m, recipient: r, steps: simulated } of items)
    for (const step of simulated) {
      if (step.kind === 'complaint') {
        if (seen.has(r.id)) continue;
        seen.add(r.id);
      }
      steps.push({ m, r, t: sandboxTransition(m, r, step, policy, now) });
    }
  await applyTransitions(q, steps, now);
}

export function pgDelivery(db: PgDb): DeliveryStore {
  return {
    claim: (worker, now, limit) => claim(db, worker, now, limit),
    record: (g) => db.tx((q) => record(q, g)),
    recordSandbox: (items, policy, now) => db.tx((q) => recordSandbox(q, items, policy, now)),
    postpone: (items) => db.tx((q) => postpone(q, items)),
    releaseClaims: async (ids) =>
      void (ids.length && (await db.run('DELETE FROM recipient_claims WHERE recipient_id = ANY($1::bigint[])', [ids]))),
    releaseAllClaims: () => db.run('DELETE FROM recipient_claims'),
    setThrottle: async (change, now, holder) =>
      void (change.kind === 'set'
        ? await saveThrottle(db, change.record, now, holder)
        : await db.run('DELETE FROM destination_throttles WHERE destination = $1 AND holder = $2', [
            change.destination,
            holder,
          ])),
    shareDestination: (destination, node, decide) => db.tx((q) => shareDestination(q, destination, node, decide)),
    touchUse: async (node) => {
      await db.run('UPDATE destination_use SET seen_at = now() WHERE node = $1', [node]);
      await db.run("DELETE FROM destination_use WHERE seen_at < now() - interval '1 minute'");
    },
    throttles: (holder) => throttles(db, holder),
    heldDestinations: async () => (await heldDestinations(db)).map((h) => h.destination),
    retriedAt: (destinations) => retriedAt(db, destinations),
    holdClaimed: (ids, now) => db.tx((q) => holdClaimed(q, ids, now)),
    noteDestination: async (domain, destination, now) => void (await noteDestination(db, domain, destination, now)),
  };
}

/** Claims the due recipients and loads their messages (a recipient whose message is gone is left out). */
async function claim(
  db: PgDb,
  worker: string,
  now: number,
  limit: number,
): Promise<Array<{ recipient: Claimed; message: QueuedMessage }>> {
  const rows = await db.rows<ClaimedRow>(CLAIM, [worker, now, limit]);
  if (rows.length === 0) return [];
  const messages = await loadMessages(
    db,
    rows.map((r) => r.message_id),
  );
  const out: Array<{ recipient: Claimed; message: QueuedMessage }> = [];
  for (const r of rows) {
    const message = messages.get(r.message_id);
    if (message) out.push({ recipient: claimedView(r), message });
  }
  return out;
}

/** What the other nodes use of a destination, given to `decide`, and this node's use as it decides (outbound.limits_scope = "cluster"). */
async function shareDestination(
  q: Q,
  destination: string,
  node: string,
  decide: Parameters<DeliveryStore['shareDestination']>[2],
): Promise<void> {
  // One node at a time per destination: read the others' use, decide, write this node's.
  await q.run("SELECT pg_advisory_xact_lock(hashtextextended('posthaste destination ' || $1, 0))", [destination]);
  const others = (await q.row<{ open: number; minute: number; started: number }>(
    `SELECT coalesce(sum(open), 0)::int AS open, coalesce(max(minute), 0) AS minute, coalesce(sum(started) FILTER (WHERE minute = (SELECT max(minute) FROM destination_use WHERE destination = $1)), 0)::int AS started
         FROM destination_use WHERE destination = $1 AND node <> $2 AND seen_at > now() - interval '1 minute'`,
    [destination, node],
  ))!;
  const t = await q.row<ThrottleRow>(
    `SELECT ${THROTTLE_COLUMNS} FROM destination_throttles WHERE destination = $1 AND holder = $2`,
    [destination, CLUSTER_THROTTLE],
  );
  const mine = decide({ ...others, throttle: t ? throttleView(t) : null });
  await publishUse(q, destination, node, mine);
}

async function throttles(db: PgDb, holder: string | undefined): Promise<DestinationThrottle[]> {
  const rows = await db.rows<ThrottleRow>(
    `SELECT ${THROTTLE_COLUMNS}, holder FROM destination_throttles WHERE $1::text IS NULL OR holder = $1 ORDER BY updated_at DESC, destination, holder`,
    [holder ?? null],
  );
  return rows.map(throttleView);
}
