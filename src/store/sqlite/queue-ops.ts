import type { CancelResult, HeldDestination, QueueChange, QueueOp, QueueSelection } from '../model.js';
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
import type { Db } from './db.js';

/**
 * The operator's queue on SQLite (the rules: store/queue-ops.ts), each operation one immediate
 * transaction, so no claim comes between what is counted and what is changed. The daemon is not
 * told: it finds what became due at its next poll (outbound.poll_interval), or the caller kicks
 * its own scheduler.
 */

/** A statement's SQL with named parameters (`@p0`…), and their values. */
function build(make: (d: Dialect) => string): { sql: string; args: Record<string, unknown> } {
  const args: Record<string, unknown> = {};
  let i = 0;
  const sql = make({
    p: (v) => {
      const name = `p${i++}`;
      args[name] = v;
      return `@${name}`;
    },
    greatest: 'max',
  });
  return { sql, args };
}

function apply(db: Db, op: QueueOp, sel: QueueSelection, now: number, dryRun: boolean): QueueChange {
  const where = (d: Dialect) => [...selectionWhere(sel, d), ...opWhere(op, now, d)].join(' AND ');
  return db.tx(() => {
    const count = build((d) => countSql([where(d)]));
    const counted = db.statement(count.sql).get(count.args) as { n: number; in_flight: number };
    const out: QueueChange = { op, changed: counted.n, in_flight: counted.in_flight };
    const rule = destinationRule(op, sel);
    if (rule) out.rule = setRule(db, sel.destination!.toLowerCase(), rule === 'hold', now, dryRun);
    if (dryRun) return out;
    if (op === 'retry')
      for (const note of retryNotes(sel, now, where)) {
        const st = build(note);
        db.statement(st.sql).run(st.args);
      }
    const update = build((d) => `UPDATE recipients AS r SET ${opSet(op, now, d)} WHERE ${where(d)}`);
    out.changed = db.statement(update.sql).run(update.args).changes;
    return out;
  });
}

/** A message canceled: its waiting recipients deleted, in one transaction with the answer (QueueStore.cancel). */
function cancel(db: Db, messageRowId: number, customerId: number | undefined, now: number): CancelResult {
  return db.tx(() => {
    const owner = db.statement('SELECT customer_id FROM messages WHERE id = ?').get(messageRowId) as
      | { customer_id: number }
      | undefined;
    if (!owner || (customerId !== undefined && owner.customer_id !== customerId)) return { kind: 'not_found' };
    const change = apply(db, 'delete', cancelSelection(messageRowId, customerId), now, false);
    const states = build((d) => statesSql(d, messageRowId));
    return cancelResult(change, change.changed > 0 ? [] : (db.statement(states.sql).all(states.args) as never[]));
  });
}

/** Adds or removes a held destination (dry: only says whether it would). */
function setRule(
  db: Db,
  destination: string,
  held: boolean,
  now: number,
  dryRun: boolean,
): NonNullable<QueueChange['rule']> {
  const was = db.statement('SELECT 1 FROM held_destinations WHERE destination = ?').get(destination) !== undefined;
  if (!dryRun && was !== held) {
    if (held) db.statement('INSERT INTO held_destinations (destination, held_at) VALUES (?, ?)').run(destination, now);
    else db.statement('DELETE FROM held_destinations WHERE destination = ?').run(destination);
  }
  return { destination, held, changed: was !== held };
}

export function heldDestinations(db: Db): HeldDestination[] {
  return db
    .statement('SELECT destination, held_at FROM held_destinations ORDER BY destination')
    .all() as HeldDestination[];
}

/** Claimed recipients of a held destination: held without an attempt, their claims released (the scheduler's). */
export function holdClaimed(db: Db, ids: readonly number[], now: number): void {
  const hold = db.statement(
    "UPDATE recipients SET held_at = ?, next_attempt_at = NULL, updated_at = ? WHERE id = ? AND state IN ('queued', 'deferred')",
  );
  const release = db.statement('DELETE FROM recipient_claims WHERE recipient_id = ?');
  db.tx(() => {
    for (const id of ids) {
      hold.run(now, now, id);
      release.run(id);
    }
  });
}

/** When each of these destinations was last retried by an operator (those never retried left out). */
export function retriedAt(db: Db, destinations: readonly string[]): Map<string, number> {
  const rows = db
    .statement(
      'SELECT destination, retried_at FROM queue_retries WHERE destination IN (SELECT value FROM json_each(?))',
    )
    .all(JSON.stringify(destinations)) as Array<{ destination: string; retried_at: number }>;
  return new Map(rows.map((r) => [r.destination, r.retried_at]));
}

/** A domain's destination as delivery looked it up (written only when it changed; its own: forgotten). */
export function noteDestination(db: Db, domain: string, destination: string, now: number): void {
  if (destination === domain) {
    db.statement('DELETE FROM domain_destinations WHERE domain = ?').run(domain);
    return;
  }
  db.statement(
    `INSERT INTO domain_destinations (domain, destination, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (domain) DO UPDATE SET destination = excluded.destination, updated_at = excluded.updated_at
     WHERE domain_destinations.destination <> excluded.destination`,
  ).run(domain, destination, now);
}

export function sqliteQueue(db: Db): QueueStore {
  return {
    list: async (sel, limit) => {
      const q = build((d) => listSql(sel, limit, d));
      return (db.statement(q.sql).all(q.args) as Parameters<typeof queueEntry>[0][]).map(queueEntry);
    },
    apply: async (op, sel, now, dryRun) => apply(db, op, sel, now, dryRun),
    cancel: async (messageRowId, customerId, now) => cancel(db, messageRowId, customerId, now),
    heldDestinations: async () => heldDestinations(db),
  };
}
