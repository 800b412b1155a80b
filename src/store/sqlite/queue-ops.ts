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
    const counted = db.get<{ n: number; in_flight: number }>(count.sql, count.args)!;
    const out: QueueChange = { op, changed: counted.n, in_flight: counted.in_flight };
    const rule = destinationRule(op, sel);
    if (rule) out.rule = setRule(db, sel.destination!.toLowerCase(), rule === 'hold', now, dryRun);
    if (dryRun) return out;
    if (op === 'retry')
      for (const note of retryNotes(sel, now, where)) {
        const st = build(note);
        db.run(st.sql, st.args);
      }
    const update = build((d) => `UPDATE recipients AS r SET ${opSet(op, now, d)} WHERE ${where(d)}`);
    out.changed = db.run(update.sql, update.args).changes;
    return out;
  });
}

/** A message canceled: its waiting recipients deleted, in one transaction with the answer (QueueStore.cancel). */
function cancel(db: Db, messageRowId: number, customerId: number | undefined, now: number): CancelResult {
  return db.tx(() => {
    const owner = db.get<{ customer_id: number }>('SELECT customer_id FROM messages WHERE id = ?', messageRowId);
    if (!owner || (customerId !== undefined && owner.customer_id !== customerId)) return { kind: 'not_found' };
    const change = apply(db, 'delete', cancelSelection(messageRowId, customerId), now, false);
    const states = build((d) => statesSql(d, messageRowId));
    return cancelResult(change, change.changed > 0 ? [] : db.all<never>(states.sql, states.args));
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
  const was = db.get('SELECT 1 FROM held_destinations WHERE destination = ?', destination) !== undefined;
  if (!dryRun && was !== held) {
    if (held) db.run('INSERT INTO held_destinations (destination, held_at) VALUES (?, ?)', destination, now);
    else db.run('DELETE FROM held_destinations WHERE destination = ?', destination);
  }
  return { destination, held, changed: was !== held };
}

export function heldDestinations(db: Db): HeldDestination[] {
  return db.all<HeldDestination>('SELECT destination, held_at FROM held_destinations ORDER BY destination');
}

/** Claimed recipients of a held destination: held without an attempt, their claims released (the scheduler's). */
export function holdClaimed(db: Db, ids: readonly number[], now: number): void {
  db.tx(() => {
    for (const id of ids) {
      db.run(
        "UPDATE recipients SET held_at = ?, next_attempt_at = NULL, updated_at = ? WHERE id = ? AND state IN ('queued', 'deferred')",
        now,
        now,
        id,
      );
      db.run('DELETE FROM recipient_claims WHERE recipient_id = ?', id);
    }
  });
}

/** When each of these destinations was last retried by an operator (those never retried left out). */
export function retriedAt(db: Db, destinations: readonly string[]): Map<string, number> {
  const rows = db.all<{ destination: string; retried_at: number }>(
    'SELECT destination, retried_at FROM queue_retries WHERE destination IN (SELECT value FROM json_each(?))',
    JSON.stringify(destinations),
  );
  return new Map(rows.map((r) => [r.destination, r.retried_at]));
}

/** A domain's destination as delivery looked it up (written only when it changed; its own: forgotten). */
export function noteDestination(db: Db, domain: string, destination: string, now: number): void {
  if (destination === domain) {
    db.run('DELETE FROM domain_destinations WHERE domain = ?', domain);
    return;
  }
  db.run(
    `INSERT INTO domain_destinations (domain, destination, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (domain) DO UPDATE SET destination = excluded.destination, updated_at = excluded.updated_at
     WHERE domain_destinations.destination <> excluded.destination`,
    domain,
    destination,
    now,
  );
}

export function sqliteQueue(db: Db): QueueStore {
  return {
    list: async (sel, limit) => {
      const q = build((d) => listSql(sel, limit, d));
      return db.all<Parameters<typeof queueEntry>[0]>(q.sql, q.args).map(queueEntry);
    },
    apply: async (op, sel, now, dryRun) => apply(db, op, sel, now, dryRun),
    cancel: async (messageRowId, customerId, now) => cancel(db, messageRowId, customerId, now),
    heldDestinations: async () => heldDestinations(db),
  };
}
