import type { SandboxStep } from '../../domain/sandbox.js';
import {
  asyncBounceTransition,
  complaintTransition,
  type OutcomePolicy,
  outcomeTransition,
  type Transition,
} from '../../domain/transitions.js';
import type { RequestFormat } from './messages.js';

/** The store's model for the delivery queue: a claimed recipient and its message, as delivery reads them. */

/** A claimed recipient with what delivery needs. */
export interface Claimed {
  id: number;
  messageRowId: number;
  address: string;
  domain: string;
  attempts: number;
  /** The source address it was last tried from (outbound.pools), kept on a retry while it is in its pool; null before any, or without pools. */
  sourceIp: string | null;
}

export interface QueuedMessage {
  id: number;
  customerId: number;
  messageId: string;
  /** The id in the Message-ID field when it is not messageId (the sender's own), bare; else null. */
  headerMessageId: string | null;
  sandbox: boolean;
  fromHeader: string;
  senderDomain: string;
  subject: string;
  metadata: Record<string, string>;
  request: Buffer;
  /** `mime`: request is the message itself, signed as it is; `json`: the send request, composed at the first attempt. */
  requestFormat: RequestFormat;
  raw: Buffer | null;
  createdAt: number;
  tags: string[];
  /** Its send asked for the List-Unsubscribe fields (the customer's default may ask too). */
  unsubscribe: boolean;
  /** The pool the sender chose for it (AcceptInput.pool); null: its customer's default, else the configured one. */
  pool: string | null;
}

// The operator's queue (docs/operations.md, "The queue"): which waiting recipients a command
// selects, what each operation does to them, and what it answers.

/** Where a waiting recipient stands: due or scheduled (`queued`), waiting for a retry (`deferred`), or held by an operator. */
export type QueueState = 'queued' | 'deferred' | 'held';
export const QUEUE_STATES: readonly QueueState[] = ['queued', 'deferred', 'held'];

/** The waiting recipients (queued or deferred, held or not) an operation or a listing takes; every field given narrows it. */
export interface QueueSelection {
  /** A message's row id (its Message-ID resolved first: an unknown one is the caller's error). */
  messageRowId?: number;
  recipient?: string;
  /** A destination as throttling names it (domain/destinations.ts): a domain's is the one last looked up for it, else the domain itself. */
  destination?: string;
  customerId?: number;
  state?: QueueState;
  /** Accepted before this time (ms). */
  acceptedBefore?: number;
}

/** An operator's operation on waiting recipients (what each changes: store/queue-ops.ts). */
export type QueueOp = 'retry' | 'hold' | 'release' | 'delete';
export const QUEUE_OPS: readonly QueueOp[] = ['retry', 'hold', 'release', 'delete'];
/** Operations after which recipients are due now: the nodes are woken. */
export const WAKING_OPS: ReadonlySet<QueueOp> = new Set(['retry', 'release']);

/** One waiting recipient, as `queue list` shows it. */
export interface QueueEntry {
  recipient_id: number;
  message_id: string;
  customer: string;
  address: string;
  /** The destination last looked up for its domain; the domain itself before any (or when it is its own). */
  destination: string;
  state: QueueState;
  attempts: number;
  /** The last reply (JSON as stored), null before any. */
  last_response: string | null;
  /** Null while held. */
  next_attempt_at: number | null;
  held_at: number | null;
  accepted_at: number;
  /** A node is delivering it now: a change applies from its next claim. */
  in_flight: boolean;
}

/** What an operation changed (or, dry, would change). */
export interface QueueChange {
  op: QueueOp;
  /** Recipients changed. */
  changed: number;
  /** Of those, being delivered now: their attempt finishes first (docs/operations.md, "The queue"). */
  in_flight: number;
  /** Holding or releasing by destination: the held destination, and whether this added (or removed) it. */
  rule?: { destination: string; held: boolean; changed: boolean };
}

/** A destination held by an operator: what is accepted for it is held too until released. */
export interface HeldDestination {
  destination: string;
  held_at: number;
}

/** A message canceled (QueueStore.cancel): what of it waited is `canceled`; or nothing was left to cancel. */
export type CancelResult =
  | { kind: 'canceled'; changed: number; in_flight: number }
  | { kind: 'not_found' }
  | { kind: 'too_late'; states: Record<string, number> };

/**
 * A sandbox key's simulated step (domain/sandbox.ts) as the transition a real delivery, late
 * bounce or complaint would make, one rule for both engines, which write it as they write those.
 * A complaint's step is written only when the recipient has none yet (one `email.complained` per
 * recipient): the engine looks.
 */
export function sandboxTransition(
  m: QueuedMessage,
  r: Claimed,
  step: SandboxStep,
  policy: OutcomePolicy,
  now: number,
): Transition {
  switch (step.kind) {
    case 'async_bounce':
      return asyncBounceTransition(m, r, step.reply, true, now);
    case 'complaint':
      return complaintTransition(
        m,
        r,
        { feedback_type: step.feedbackType, user_agent: step.userAgent, arrival_date: new Date(now).toISOString() },
        now,
      );
    case 'delivered':
      return outcomeTransition(
        m,
        r,
        { kind: 'delivered', reply: step.reply, mx: 'sandbox', tls: false, tlsVerified: false },
        policy,
        now,
      );
    default:
      return outcomeTransition(m, r, step, policy, now);
  }
}
