import type { Outcome } from '../domain/outcome.js';
import type { SandboxStep } from '../domain/sandbox.js';
import type { OutcomePolicy } from '../domain/transitions.js';
import type { Claimed, DestinationThrottle, QueuedMessage } from './model.js';

// The delivery path's part of the store (store.ts): claims, a group's outcomes, sandbox steps,
// postponements and the destinations' throttling, alone and shared by the nodes.

/** One recipient's attempt and what came of it. */
export interface AttemptOutcome {
  message: QueuedMessage;
  recipient: Claimed;
  outcome: Outcome;
}

/** What one delivery group writes, in one transaction. */
export interface GroupRecord {
  results: AttemptOutcome[];
  /** Composed copies by message row id: kept while a recipient of the message may still be retried. */
  composed: Map<number, Buffer>;
  /** Recipients held back without an attempt, until when (claims released). */
  postpone: Array<{ id: number; until: number }>;
  policy: OutcomePolicy;
  now: number;
}

export interface DeliveryStore {
  /** Claims up to `limit` due recipients for `worker`, earliest due first, with their messages. */
  claim(worker: string, now: number, limit: number): Promise<Array<{ recipient: Claimed; message: QueuedMessage }>>;
  record(group: GroupRecord): Promise<void>;
  /** Sandbox recipients: the simulator's steps for each, recorded in one transaction. */
  recordSandbox(
    items: Array<{ message: QueuedMessage; recipient: Claimed; steps: SandboxStep[] }>,
    policy: OutcomePolicy,
    now: number,
  ): Promise<void>;
  /** Holds claimed recipients back until the given times (claims released; state untouched). */
  postpone(items: ReadonlyArray<{ id: number; until: number }>): Promise<void>;
  releaseClaims(ids: number[]): Promise<void>;
  /** Releases every claim, whoever holds it (a store no daemon runs on; daemons release dead nodes' claims: NodeStore). */
  releaseAllClaims(): Promise<number>;
  /**
   * A destination's throttling as it now stands for `holder` (kept so a restart does not hammer a
   * destination that asked us to wait); the caller writes one at a time, in order. The holder is
   * a node's name (limits per node: each node's backoff is its own, and survives its restart) or
   * CLUSTER_THROTTLE (limits_scope = "cluster"). The SQLite engine is one node: it keeps one
   * throttling per destination, whoever the holder.
   */
  setThrottle(
    change: { kind: 'set'; record: DestinationThrottle } | { kind: 'cleared'; destination: string },
    now: number,
    holder: string,
  ): Promise<void>;
  /** The throttled destinations of `holder`; without one, of every holder. */
  throttles(holder?: string): Promise<DestinationThrottle[]>;

  // Held destinations (docs/operations.md, "The queue"): what is claimed for one is held, not sent.
  /** The held destinations' names (QueueStore holds and releases them). */
  heldDestinations(): Promise<string[]>;
  /**
   * When each of these destinations was last retried by an operator (QueueStore.apply('retry');
   * those never retried left out): a node lifts an adaptive pause it set before that.
   */
  retriedAt(destinations: readonly string[]): Promise<Map<string, number>>;
  /** Claimed recipients of a held destination: held without an attempt (no due time), their claims released. */
  holdClaimed(ids: readonly number[], now: number): Promise<void>;
  /**
   * A recipient domain's destination as this node looked it up, so a selection by destination
   * finds its recipients; the domain itself (it is its own) forgets what was kept for it.
   */
  noteDestination(domain: string, destination: string, now: number): Promise<void>;

  // outbound.limits_scope = "cluster" (outbound/throttle.ts): a destination's limits shared by the nodes.
  /**
   * Runs `decide` with the destination's use by the other live nodes and its shared throttling
   * (undefined: nothing is shared, one process), and stores the use it answers as this node's;
   * no other node's `shareDestination` for the destination runs in between.
   */
  shareDestination(destination: string, node: string, decide: (others: SharedUse) => OwnUse): Promise<void>;
  /** This node is alive: its use keeps counting; the use of nodes silent for a minute is removed. */
  touchUse(node: string): Promise<void>;
}

/** What the other live nodes use of a destination: connections open, messages started in `minute` (epoch ms / 60,000). */
export interface SharedUse {
  open: number;
  minute: number;
  started: number;
  throttle: DestinationThrottle | null | undefined;
}

export interface OwnUse {
  open: number;
  minute: number;
  started: number;
}
