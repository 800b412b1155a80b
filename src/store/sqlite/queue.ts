import type { Claimed, QueuedMessage } from '../model.js';
import {
  type ClaimedRow,
  claimedView,
  QUEUED_MESSAGE_COLUMNS,
  type QueuedMessageRow,
  queuedMessage,
} from '../views.js';
import { BOUND_LIMIT, type Db } from './db.js';

/** Releases every claim (at start: claims of a process that died). Returns how many. */
export function releaseClaims(db: Db): number {
  return db.run('DELETE FROM recipient_claims').changes;
}

/**
 * Claims up to `limit` due recipients, earliest due first: reads them through the due index and
 * records the claims in `recipient_claims`, in one immediate transaction (so no two workers get
 * one recipient). The recipient rows themselves are not written until the outcome. A paused
 * customer's recipients are not claimed (its queue is held without its rows being written, and,
 * expiry being decided only at an attempt, none expires while it is paused).
 */
export function claimDue(db: Db, worker: string, now: number, limit: number): Claimed[] {
  const due = (n: number) =>
    db.all<ClaimedRow>(
      `SELECT r.id, r.message_id, r.address, r.domain, r.attempts FROM recipients r
       WHERE r.state IN ('queued', 'deferred') AND r.next_attempt_at <= ?
         AND NOT EXISTS (SELECT 1 FROM recipient_claims c WHERE c.recipient_id = r.id)
         AND NOT EXISTS (SELECT 1 FROM customer_reputation p WHERE p.customer_id = r.customer_id AND p.paused_at IS NOT NULL)
       ORDER BY r.next_attempt_at ${BOUND_LIMIT}`,
      now,
      n,
    );
  // Nothing due (the usual poll): a read, without taking the write lock, which waiting for would
  // block the event loop in SQLite's busy handler while the writer thread commits.
  if (!db.sqlite.inTransaction && due(1).length === 0) return [];
  return db.tx(() => {
    const rows = due(limit);
    for (const r of rows) {
      db.run('INSERT INTO recipient_claims (recipient_id, worker, claimed_at) VALUES (?, ?, ?)', r.id, worker, now);
      // A retry keeps the source address it was first tried from (outbound.pools).
      if (r.attempts > 0)
        r.source_ip = db.get<{ source_ip: string | null }>(
          'SELECT source_ip FROM recipients WHERE id = ?',
          r.id,
        )!.source_ip;
    }
    return rows.map(claimedView);
  });
}

export function loadMessages(db: Db, ids: number[]): Map<number, QueuedMessage> {
  const out = new Map<number, QueuedMessage>();
  for (const id of new Set(ids)) {
    const m = db.get<QueuedMessageRow>(`SELECT ${QUEUED_MESSAGE_COLUMNS} FROM messages WHERE id = ?`, id);
    if (m) out.set(id, queuedMessage(m));
  }
  return out;
}

/** A recipient of the message (`messages.id` in the enclosing statement) may still be sent to. */
const UNFINISHED =
  "EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = messages.id AND r.state IN ('queued', 'deferred'))";

/**
 * A message composed for the first time: its size is kept, and its bytes while some recipient of
 * it may still be sent to (a retry, or a recipient at another destination, then gets the same
 * bytes). Called after the outcomes it follows are recorded. A message every recipient of which
 * is done is not kept twice (its request is), so the store does not grow by a composed copy of
 * every message delivered at the first attempt.
 */
export function keepComposed(db: Db, messageRowId: number, raw: Buffer): void {
  // A copy already there (another destination's delivery composed it first) stays the one kept.
  db.run(
    `UPDATE messages SET size = CASE WHEN raw IS NULL THEN ? ELSE size END, raw = CASE WHEN ${UNFINISHED} THEN coalesce(raw, ?) END WHERE id = ?`,
    raw.length,
    raw,
    messageRowId,
  );
}

/** Drops the composed copy of a message once none of its recipients is left to send to. */
export function dropComposedIfDone(db: Db, messageRowId: number): void {
  db.run(`UPDATE messages SET raw = NULL WHERE id = ? AND raw IS NOT NULL AND NOT ${UNFINISHED}`, messageRowId);
}

/** Drops a recipient's claim (its outcome is being recorded, or it is handed back). */
export function releaseClaim(db: Db, recipientId: number): void {
  db.run('DELETE FROM recipient_claims WHERE recipient_id = ?', recipientId);
}

export function releaseClaimsOf(db: Db, ids: number[]): void {
  db.tx(() => {
    for (const id of ids) releaseClaim(db, id);
  });
}

/**
 * Holds claimed recipients back until the given times without an attempt: the claim is released
 * and the recipient becomes due again then (its state, attempts and events are untouched).
 */
export function postponeClaimed(db: Db, items: ReadonlyArray<{ id: number; until: number }>): void {
  db.tx(() => {
    for (const { id, until } of items) {
      db.run('UPDATE recipients SET next_attempt_at = ? WHERE id = ? AND next_attempt_at < ?', until, id, until);
      releaseClaim(db, id);
    }
  });
}
