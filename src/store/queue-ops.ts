import type { CancelResult, QueueChange, QueueEntry, QueueOp, QueueSelection } from './model.js';

/*
 * The operator's queue operations (docs/operations.md, "The queue"), written once for both
 * engines: which waiting recipients a selection takes, which of them each operation changes and
 * what it writes (how an attempt in flight meets a change made meanwhile is the outcome's rule:
 * domain/transitions.ts, keptByOperator). Each engine runs
 * this SQL with its own placeholders; the engines differ only in `greatest` (SQLite: max).
 *
 * A held recipient keeps its state (queued or deferred) and has `held_at` set and no due time
 * (`next_attempt_at` NULL), so no claim ever reads it (claims take `next_attempt_at <= now`):
 * nothing on the claim path changes. Its max_queue_time is not applied while it is held, since
 * expiry is decided only at an attempt (domain/transitions.ts); released, it is due at once and
 * its lifetime, counted from acceptance, applies again from that attempt.
 */

export interface Dialect {
  /** The placeholder for a value (and binds it). */
  p: (value: unknown) => string;
  greatest: 'max' | 'greatest';
}

/** Waiting to be sent: queued or deferred, held or not. An IN list, so SQLite sees recipients_due's condition. */
const WAITING = "r.state IN ('queued', 'deferred')";
const CLAIMED = 'EXISTS (SELECT 1 FROM recipient_claims c WHERE c.recipient_id = r.id)';
/** A recipient's destination: the one last looked up for its domain (domain_destinations), else the domain itself. */
const DESTINATION =
  'coalesce((SELECT dd.destination FROM domain_destinations dd WHERE dd.domain = r.domain), r.domain)';

/** A recipient's message's scheduled time (0: none). */
const SCHEDULED_AT = 'coalesce((SELECT m.scheduled_at FROM messages m WHERE m.id = r.message_id), 0)';

/** The conditions on recipients `r` that a selection makes. */
export function selectionWhere(sel: QueueSelection, d: Dialect): string[] {
  const w = [WAITING];
  if (sel.state === 'held') w.push('r.held_at IS NOT NULL');
  else if (sel.state === 'queued') w.push("r.state = 'queued'", 'r.held_at IS NULL');
  else if (sel.state === 'deferred') w.push("r.state = 'deferred'", 'r.held_at IS NULL');
  if (sel.messageRowId !== undefined) w.push(`r.message_id = ${d.p(sel.messageRowId)}`);
  if (sel.recipient !== undefined) w.push(`r.address IN (${d.p(sel.recipient)}, ${d.p(sel.recipient.toLowerCase())})`);
  if (sel.customerId !== undefined) w.push(`r.customer_id = ${d.p(sel.customerId)}`);
  if (sel.destination !== undefined) w.push(`${DESTINATION} = ${d.p(sel.destination.toLowerCase())}`);
  if (sel.acceptedBefore !== undefined) w.push(`r.created_at < ${d.p(sel.acceptedBefore)}`);
  return w;
}

/**
 * Of the selected recipients, those an operation changes, and what it writes (`now` bound):
 * - retry: a recipient not held and not being delivered that waits for a later time (deferred,
 *   or queued and held back by its destination's limits or pause; never a scheduled message
 *   before its time) becomes due now; its attempts and its acceptance time (max_queue_time counts
 *   from it) are untouched; its destination's adaptive pause is lifted (retryNotes);
 * - hold: a recipient not held gets no due time (an attempt in flight finishes first, and its
 *   outcome keeps the hold: domain/transitions.ts, keptByOperator);
 * - release: a held recipient becomes due now (a scheduled message: at its time, if later);
 * - delete: every selected recipient ends `canceled`, as a canceled message's do (no event).
 * These are the conditions; opSet what is written.
 */
export function opWhere(op: QueueOp, now: number, d: Dialect): string[] {
  switch (op) {
    case 'retry':
      return [
        `r.next_attempt_at > ${d.p(now)}`,
        'r.held_at IS NULL',
        `NOT ${CLAIMED}`,
        `(r.state = 'deferred' OR ${SCHEDULED_AT} <= ${d.p(now)})`,
      ];
    case 'hold':
      return ['r.held_at IS NULL'];
    case 'release':
      return ['r.held_at IS NOT NULL'];
    case 'delete':
      return [];
  }
}

/** What an operation writes to the recipients opWhere takes (`r`). */
export function opSet(op: QueueOp, now: number, d: Dialect): string {
  const at = d.p(now);
  switch (op) {
    case 'retry':
      return `next_attempt_at = ${at}, updated_at = ${at}`;
    case 'hold':
      return `held_at = ${at}, next_attempt_at = NULL, updated_at = ${at}`;
    case 'release':
      return `held_at = NULL, next_attempt_at = ${d.greatest}(${at}, coalesce((SELECT m.scheduled_at FROM messages m WHERE m.id = r.message_id), 0)), updated_at = ${at}`;
    case 'delete':
      return `state = 'canceled', held_at = NULL, next_attempt_at = NULL, updated_at = ${at}`;
  }
}

/**
 * A retry lifts the adaptive pause of the destinations it retried (docs/operations.md, "The
 * queue"): each one noted in queue_retries with the time (every node lifts a pause it set before
 * that, at its next claim of the destination's recipients: DeliveryStore.retriedAt), and the
 * throttling kept in the store no longer paused. Run before the update, `where` being its
 * conditions; the selection's destination is noted even when none of its recipients changed.
 */
export function retryNotes(
  sel: QueueSelection,
  now: number,
  where: (d: Dialect) => string,
): Array<(d: Dialect) => string> {
  const upsert = 'ON CONFLICT (destination) DO UPDATE SET retried_at = excluded.retried_at';
  const notes = [
    (d: Dialect) =>
      `INSERT INTO queue_retries (destination, retried_at) SELECT DISTINCT ${DESTINATION}, ${d.p(now)} FROM recipients r WHERE ${where(d)} ${upsert}`,
  ];
  const named = sel.destination;
  if (named !== undefined)
    notes.push(
      (d) =>
        `INSERT INTO queue_retries (destination, retried_at) VALUES (${d.p(named.toLowerCase())}, ${d.p(now)}) ${upsert}`,
    );
  notes.push(
    (d) =>
      `UPDATE destination_throttles SET paused_until = ${d.p(now)} WHERE paused_until > ${d.p(now)} AND destination IN (SELECT q.destination FROM queue_retries q WHERE q.retried_at = ${d.p(now)})`,
  );
  return notes;
}

/** How many of the recipients the conditions take are being delivered now, and how many in all. */
export function countSql(where: string[]): string {
  return `SELECT count(*) AS n, coalesce(sum(CASE WHEN ${CLAIMED} THEN 1 ELSE 0 END), 0) AS in_flight FROM recipients r WHERE ${where.join(' AND ')}`;
}

/** Whether the operation also adds or removes a held destination (docs/operations.md, "Held destinations"). */
export function destinationRule(op: QueueOp, sel: QueueSelection): 'hold' | 'release' | null {
  if (sel.destination === undefined) return null;
  return op === 'hold' ? 'hold' : op === 'release' ? 'release' : null;
}

/** The waiting recipients a selection takes, the longest waiting first (QueueStore.list). */
export function listSql(sel: QueueSelection, limit: number, d: Dialect): string {
  return `SELECT r.id AS recipient_id, m.message_id, cu.name AS customer, r.address, ${DESTINATION} AS destination,
      CASE WHEN r.held_at IS NOT NULL THEN 'held' ELSE r.state END AS state, r.attempts, r.last_response,
      r.next_attempt_at, r.held_at, r.created_at AS accepted_at, CASE WHEN ${CLAIMED} THEN 1 ELSE 0 END AS in_flight
    FROM recipients r JOIN messages m ON m.id = r.message_id JOIN customers cu ON cu.id = r.customer_id
    WHERE ${selectionWhere(sel, d).join(' AND ')} ORDER BY r.created_at, r.id LIMIT ${d.p(limit)} + 0`;
}

/** A row of listSql as its entry (the engines' integers and flags read alike). */
export function queueEntry(row: Omit<QueueEntry, 'in_flight'> & { in_flight: number | boolean }): QueueEntry {
  return {
    ...row,
    recipient_id: Number(row.recipient_id),
    attempts: Number(row.attempts),
    next_attempt_at: row.next_attempt_at === null ? null : Number(row.next_attempt_at),
    held_at: row.held_at === null ? null : Number(row.held_at),
    accepted_at: Number(row.accepted_at),
    in_flight: Number(row.in_flight) === 1,
  };
}

/**
 * A message canceled (QueueStore.cancel) is its waiting recipients deleted, this selection; the
 * owner's check is the selection's customer (none: any customer's, the CLI).
 */
export function cancelSelection(messageRowId: number, customerId: number | undefined): QueueSelection {
  return customerId === undefined ? { messageRowId } : { messageRowId, customerId };
}

/** A message's recipients by state, for the answer when nothing was left to cancel. */
export function statesSql(d: Dialect, messageRowId: number): string {
  return `SELECT state, count(*) AS n FROM recipients WHERE message_id = ${d.p(messageRowId)} GROUP BY state ORDER BY state`;
}

/** What a cancel answers: the delete's change, or the states when it changed nothing. */
export function cancelResult(
  change: QueueChange,
  states: ReadonlyArray<{ state: string; n: number | string }>,
): CancelResult {
  if (change.changed > 0) return { kind: 'canceled', changed: change.changed, in_flight: change.in_flight };
  return { kind: 'too_late', states: Object.fromEntries(states.map((r) => [r.state, Number(r.n)])) };
}
