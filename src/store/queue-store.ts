import type { CancelResult, HeldDestination, QueueChange, QueueEntry, QueueOp, QueueSelection } from './model.js';

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
  /**
   * Cancels a message: what of it has not been sent, as `apply('delete', {messageRowId})`
   * (every door that cancels a message comes here: the API's DELETE, `messages cancel`, the
   * dashboard). `customerId`: only that customer's message (another's is `not_found`). Nothing left
   * to cancel is `too_late`, with the recipients' states.
   */
  cancel(messageRowId: number, customerId: number | undefined, now: number): Promise<CancelResult>;
  /** The held destinations, by name. */
  heldDestinations(): Promise<HeldDestination[]>;
}
