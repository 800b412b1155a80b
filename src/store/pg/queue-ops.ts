import {
  type CancelResult,
  type HeldDestination,
  type QueueChange,
  type QueueOp,
  type QueueSelection,
  WAKING_OPS,
} from '../model.js';
import {
  cancelResult,
  cancelSelection,
  countSql,
  type Dialect,
  destinationRule,
  listSql,
  opSet,
  opWhere,
  queueEntry,
  retryNotes,
  selectionWhere,
  statesSql,
} from '../queue-ops.js';
import type { QueueStore } from '../queue-store.js';
import type { PgDb, Q } from './db.js';
import { CHANNEL } from './listener.js';

/**
 * The operator's queue on PostgreSQL (the rules: store/queue-ops.ts), each operation one
 * transaction. The selected rows are locked first, skipping none: a claim (FOR NO KEY UPDATE
 * SKIP LOCKED) passes them by meanwhile, and a recipient claimed before is in flight, finished
 * by its node. After a retry or a release that changed something, every node is woken by a
 * notification sent after the commit (store/pg/wakeups.ts: the CLI is no node, so it waits for it).
 */

/** A statement's SQL with `$n` parameters typed from their values, and the values. */
function build(make: (d: Dialect) => string): { sql: string; args: unknown[] } {
  const args: unknown[] = [];
  const sql = make({
    p: (v) => {
      args.push(v);
      return `$${args.length}::${typeof v === 'number' ? 'bigint' : 'text'}`;
    },
    greatest: 'greatest',
  });
  return { sql, args };
}

async function apply(q: Q, op: QueueOp, sel: QueueSelection, now: number, dryRun: boolean): Promise<QueueChange> {
  const where = (d: Dialect) => [...selectionWhere(sel, d), ...opWhere(op, now, d)].join(' AND ');
  const lock = build((d) => `SELECT r.id FROM recipients r WHERE ${where(d)} ORDER BY r.id FOR UPDATE OF r`);
  if (!dryRun) await q.run(lock.sql, lock.args);
  const count = build((d) => countSql([where(d)]));
  const counted = (await q.row<{ n: string | number; in_flight: string | number }>(count.sql, count.args))!;
  const out: QueueChange = { op, changed: Number(counted.n), in_flight: Number(counted.in_flight) };
  const rule = destinationRule(op, sel);
  if (rule) out.rule = await setRule(q, sel.destination!.toLowerCase(), rule === 'hold', now, dryRun);
  if (dryRun) return out;
  if (op === 'retry')
    for (const note of retryNotes(sel, now, where)) {
      const st = build(note);
      await q.run(st.sql, st.args);
    }
  const update = build((d) => `UPDATE recipients AS r SET ${opSet(op, now, d)} WHERE ${where(d)}`);
  out.changed = await q.run(update.sql, update.args);
  return out;
}

/** A message canceled: its waiting recipients deleted, in one transaction with the answer (QueueStore.cancel). */
async function cancel(q: Q, messageRowId: number, customerId: number | undefined, now: number): Promise<CancelResult> {
  const owner = await q.row<{ customer_id: number | string }>('SELECT customer_id FROM messages WHERE id = $1', [
    messageRowId,
  ]);
  if (!owner || (customerId !== undefined && Number(owner.customer_id) !== customerId)) return { kind: 'not_found' };
  const change = await apply(q, 'delete', cancelSelection(messageRowId, customerId), now, false);
  if (change.changed > 0) return cancelResult(change, []);
  const states = build((d) => statesSql(d, messageRowId));
  return cancelResult(change, await q.rows<{ state: string; n: string }>(states.sql, states.args));
}

async function setRule(
  q: Q,
  destination: string,
  held: boolean,
  now: number,
  dryRun: boolean,
): Promise<NonNullable<QueueChange['rule']>> {
  if (dryRun) {
    const was = (await q.row('SELECT 1 FROM held_destinations WHERE destination = $1', [destination])) !== undefined;
    return { destination, held, changed: was !== held };
  }
  const n = held
    ? await q.run(
        'INSERT INTO held_destinations (destination, held_at) VALUES ($1, $2) ON CONFLICT (destination) DO NOTHING',
        [destination, now],
      )
    : await q.run('DELETE FROM held_destinations WHERE destination = $1', [destination]);
  return { destination, held, changed: n > 0 };
}

export function heldDestinations(q: Q): Promise<HeldDestination[]> {
  return q
    .rows<{ destination: string; held_at: string | number }>(
      'SELECT destination, held_at FROM held_destinations ORDER BY destination',
    )
    .then((rows) => rows.map((r) => ({ destination: r.destination, held_at: Number(r.held_at) })));
}

/** Claimed recipients of a held destination: held without an attempt, their claims released (the scheduler's). */
export async function holdClaimed(q: Q, ids: readonly number[], now: number): Promise<void> {
  if (ids.length === 0) return;
  await q.run(
    "UPDATE recipients SET held_at = $2, next_attempt_at = NULL, updated_at = $2 WHERE id = ANY($1::bigint[]) AND state IN ('queued', 'deferred')",
    [ids, now],
  );
  await q.run('DELETE FROM recipient_claims WHERE recipient_id = ANY($1::bigint[])', [ids]);
}

/** When each of these destinations was last retried by an operator (those never retried left out). */
export async function retriedAt(q: Q, destinations: readonly string[]): Promise<Map<string, number>> {
  const rows = await q.rows<{ destination: string; retried_at: string | number }>(
    'SELECT destination, retried_at FROM queue_retries WHERE destination = ANY($1::text[])',
    [destinations],
  );
  return new Map(rows.map((r) => [r.destination, Number(r.retried_at)]));
}

/** A domain's destination as a node looked it up (written only when it changed; its own: forgotten). */
export function noteDestination(q: Q, domain: string, destination: string, now: number): Promise<number> {
  if (destination === domain) return q.run('DELETE FROM domain_destinations WHERE domain = $1', [domain]);
  return q.run(
    `INSERT INTO domain_destinations (domain, destination, updated_at) VALUES ($1, $2, $3)
     ON CONFLICT (domain) DO UPDATE SET destination = excluded.destination, updated_at = excluded.updated_at
     WHERE domain_destinations.destination <> excluded.destination`,
    [domain, destination, now],
  );
}

export function pgQueue(db: PgDb): QueueStore {
  return {
    list: async (sel, limit) => {
      const q = build((d) => listSql(sel, limit, d));
      return (await db.rows<Parameters<typeof queueEntry>[0]>(q.sql, q.args)).map(queueEntry);
    },
    apply: async (op, sel, now, dryRun) => {
      const change = await db.tx((q) => apply(q, op, sel, now, dryRun));
      // After the commit, awaited: the CLI closes the store right after (its wakeups would be lost).
      if (!dryRun && change.changed > 0 && WAKING_OPS.has(op))
        await db.run('SELECT pg_notify($1, $2)', [CHANNEL, 'outbound queue']).catch(() => undefined);
      return change;
    },
    cancel: (messageRowId, customerId, now) => db.tx((q) => cancel(q, messageRowId, customerId, now)),
    heldDestinations: () => heldDestinations(db),
  };
}
