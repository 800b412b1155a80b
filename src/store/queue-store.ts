import type { HeldDestination, QueueChange, QueueEntry, QueueOp, QueueSelection } from './model.js';

/**
 * The operator's queue (docs/operations.md, "The queue"): the waiting recipients listed, and
 * retried, held, released or deleted by a selection, each operation one transaction; held
 * destinations, a rule every node applies at its claims (DeliveryStore.heldDestinations). The
 * rules are store/queue-ops.ts, written once for both engines.
 */
export interface QueueStore {
  /** The waiting recipients a selection takes, the longest waiting first, at most `limit`. */
  list(sel: QueueSelection, limit: number): Promise<QueueEntry[]>;
  /**
   * Applies an operation to the selected recipients (`dryRun`: counts what it would change,
   * changes nothing). Holding or releasing by destination also adds or removes the held
   * destination. After retry or release the nodes are woken (PostgreSQL: a notification after
   * the commit; SQLite: the daemon's next poll, or the caller's own kick).
   */
  apply(op: QueueOp, sel: QueueSelection, now: number, dryRun: boolean): Promise<QueueChange>;
  /** The held destinations, by name. */
  heldDestinations(): Promise<HeldDestination[]>;
}
