import type { EventType, MessageEventBase } from './events.js';
import { type Outcome, type Reply, retryDelay, type Source } from './outcome.js';
import { type Report, reportReply } from './report.js';

/**
 * A recipient's state transitions as values: what an attempt's outcome, a bounce that came back
 * later or a complaint does to the recipient row, the events it fires and the suppression it
 * asks for. Decided here, once; each store engine writes what was decided, with its events, in
 * one transaction (the outbox), so the two engines cannot disagree on a rule.
 */

/** What of a message the events of its recipients carry. */
export interface MessageFacts {
  id: number;
  customerId: number;
  messageId: string;
  /** The Message-ID field's id when the sender wrote its own (bare); null or absent: messageId. */
  headerMessageId?: string | null;
  sandbox: boolean;
  fromHeader: string;
  subject: string;
  metadata: Record<string, string>;
  tags: string[];
  createdAt: number;
}

/** What of a recipient a transition reads. */
export interface RecipientFacts {
  id: number;
  address: string;
  attempts: number;
}

export type RecipientState = 'queued' | 'deferred' | 'delivered' | 'bounced' | 'complained' | 'suppressed' | 'canceled';

export interface Transition {
  /** The recipient row's new values; a field left out keeps its value (its claim is released with them). */
  row: {
    state: RecipientState;
    attempts?: number;
    nextAttemptAt?: number | null;
    lastResponse?: string;
    /** The source address the attempt went from (outbound.pools): a retry keeps it while it is in its pool. */
    sourceIp?: string;
  };
  events: Array<{ type: EventType; data: Record<string, unknown> }>;
  /** Put the address on the customer's list (a sandbox message never touches it, but fires the event). */
  suppress: 'hard_bounce' | 'spam_complaint' | null;
}

export interface OutcomePolicy {
  retrySchedule: number[];
  maxQueueTime: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function eventBase(m: MessageFacts, recipient: string, now: number): MessageEventBase {
  return {
    email_id: m.id,
    message_id: m.messageId,
    header_message_id: m.headerMessageId ?? m.messageId,
    from: m.fromHeader,
    subject: m.subject,
    recipient,
    sandbox: m.sandbox,
    timestamp: iso(now),
    metadata: m.metadata,
    tags: m.tags,
  };
}

/**
 * An attempt's outcome: delivered, deferred (bounced as expired instead when retrying would pass
 * max_queue_time), bounced (suppressed when it blames the address), or suppressed before sending.
 */
export function outcomeTransition(
  m: MessageFacts,
  r: RecipientFacts,
  outcome: Outcome,
  policy: OutcomePolicy,
  now: number,
): Transition {
  const attempt = r.attempts + 1;
  const t = attemptTransition(m, outcome, eventBase(m, r.address, now), attempt, policy, now);
  const source: Source | undefined = 'source' in outcome ? outcome.source : undefined;
  if (!source) return t;
  // Where the attempt went from: on the row (a retry keeps it) and in its events.
  return {
    ...t,
    row: { ...t.row, sourceIp: source.ip },
    events: t.events.map((e) => ({ ...e, data: { ...e.data, pool: source.pool, source_ip: source.ip } })),
  };
}

function attemptTransition(
  m: MessageFacts,
  outcome: Outcome,
  base: MessageEventBase,
  attempt: number,
  policy: OutcomePolicy,
  now: number,
): Transition {
  switch (outcome.kind) {
    case 'delivered':
      return deliveredTransition(outcome, base, attempt);
    case 'suppressed':
      return {
        row: { state: 'suppressed', nextAttemptAt: null, lastResponse: JSON.stringify({ suppressed: outcome.reason }) },
        events: [],
        suppress: null,
      };
    case 'deferred':
      return deferredTransition(m, outcome, base, attempt, policy, now);
    case 'bounced':
      return {
        row: { state: 'bounced', attempts: attempt, nextAttemptAt: null, lastResponse: JSON.stringify(outcome.reply) },
        events: [
          { type: 'email.bounced', data: { ...base, bounce_type: outcome.bounceType, response: outcome.reply } },
        ],
        suppress: outcome.suppress && outcome.bounceType !== 'expired' ? 'hard_bounce' : null,
      };
  }
}

/** Delivered: the reply kept as the last response, and `email.delivered` with the connection's facts. */
function deliveredTransition(
  outcome: Extract<Outcome, { kind: 'delivered' }>,
  base: MessageEventBase,
  attempt: number,
): Transition {
  const { classification: _c, ...response } = outcome.reply;
  return {
    row: {
      state: 'delivered',
      attempts: attempt,
      nextAttemptAt: null,
      lastResponse: JSON.stringify(outcome.reply),
    },
    events: [
      {
        type: 'email.delivered',
        data: { ...base, response, mx: outcome.mx, tls: outcome.tls, tls_verified: outcome.tlsVerified, attempt },
      },
    ],
    suppress: null,
  };
}

/** Deferred to the schedule's next attempt, or bounced as expired when that attempt would pass max_queue_time. */
function deferredTransition(
  m: MessageFacts,
  outcome: Extract<Outcome, { kind: 'deferred' }>,
  base: MessageEventBase,
  attempt: number,
  policy: OutcomePolicy,
  now: number,
): Transition {
  const next = now + retryDelay(policy.retrySchedule, attempt);
  if (next - m.createdAt > policy.maxQueueTime) {
    // Retrying would pass max_queue_time: give up now rather than after another wait.
    const reply = expiredReply(outcome.reply);
    return {
      row: { state: 'bounced', attempts: attempt, nextAttemptAt: null, lastResponse: JSON.stringify(reply) },
      events: [{ type: 'email.bounced', data: { ...base, bounce_type: 'expired', response: reply } }],
      suppress: null,
    };
  }
  return {
    row: { state: 'deferred', attempts: attempt, nextAttemptAt: next, lastResponse: JSON.stringify(outcome.reply) },
    events: [
      { type: 'email.deferred', data: { ...base, response: outcome.reply, attempt, next_attempt_at: iso(next) } },
    ],
    suppress: null,
  };
}

/** Where an operator's queue command left a recipient while an attempt of it was in flight. */
export interface OperatorMark {
  /** Deleted (`canceled`) meanwhile. */
  canceled: boolean;
  /** Held meanwhile. */
  held: boolean;
}

/**
 * An attempt's transition for a recipient an operator deleted or held while the attempt was in
 * flight (docs/operations.md, "The queue"). What the attempt did is what happened (delivered or
 * bounced, its attempt and reply recorded), but a deferral does not undo the operator's change:
 * a deleted recipient stays `canceled` with nothing announced (a delete announces nothing), a held
 * one stays held with no next attempt (`email.deferred` with `next_attempt_at` null). The engines
 * read the mark in the transaction that writes the outcome, and keep the row's hold only while it
 * is still waiting.
 */
export function keptByOperator(t: Transition, mark: OperatorMark): Transition {
  const waiting = t.row.state === 'queued' || t.row.state === 'deferred';
  if (!waiting || !(mark.canceled || mark.held)) return t;
  if (mark.canceled) return { row: { ...t.row, state: 'canceled', nextAttemptAt: null }, events: [], suppress: null };
  return {
    row: { ...t.row, nextAttemptAt: null },
    events: t.events.map((e) =>
      e.type === 'email.deferred' ? { type: e.type, data: { ...e.data, next_attempt_at: null } } : e,
    ),
    suppress: t.suppress,
  };
}

/** The last temporary reply, restated as the give-up (RFC 3463 x.4.7: delivery time expired). */
function expiredReply(last: Reply): Reply {
  return {
    ...last,
    message: `Gave up after max_queue_time; last reply: ${last.code ? `${last.code} ` : ''}${last.message}`.trim(),
  };
}

/** A bounce that came back after delivery (a DSN, or the simulator): no attempt is counted. */
export function asyncBounceTransition(
  m: MessageFacts,
  r: Pick<RecipientFacts, 'address'>,
  reply: Reply,
  suppressAddress: boolean,
  now: number,
): Transition {
  return {
    row: { state: 'bounced', lastResponse: JSON.stringify(reply) },
    events: [
      { type: 'email.bounced', data: { ...eventBase(m, r.address, now), bounce_type: 'async', response: reply } },
    ],
    suppress: suppressAddress ? 'hard_bounce' : null,
  };
}

export interface ComplaintFacts {
  feedback_type: string;
  user_agent?: string;
  arrival_date?: string;
}

/** A spam complaint (recorded at most once per message and recipient: the engine checks that). */
export function complaintTransition(
  m: MessageFacts,
  r: Pick<RecipientFacts, 'address'>,
  report: ComplaintFacts,
  now: number,
): Transition {
  return {
    row: { state: 'complained' },
    events: [{ type: 'email.complained', data: { ...eventBase(m, r.address, now), ...report } }],
    suppress: 'spam_complaint',
  };
}

/** `recipient.suppressed`'s data: fired once per address, when the suppression is new (always in the sandbox). */
export function suppressedEventData(
  m: MessageFacts,
  address: string,
  reason: 'hard_bounce' | 'spam_complaint',
  now: number,
): Record<string, unknown> {
  return {
    recipient: address,
    reason,
    email_id: m.id,
    message_id: m.messageId,
    header_message_id: m.headerMessageId ?? m.messageId,
    sandbox: m.sandbox,
    timestamp: iso(now),
  };
}

/**
 * What a report tied to a recipient (store/model/inbound.ts, reportRecipientIds, says which, by
 * token) does: a complaint, a bounce of the entry for this recipient (else the report's first
 * failure: forwarding may have changed the address the remote system saw), or nothing (a delay
 * warning, a success report, a recipient already bounced).
 */
export function reportAction(
  report: Report,
  rcpt: { address: string; state: string },
):
  | { kind: 'complaint'; facts: ComplaintFacts }
  | { kind: 'bounce'; reply: Reply; suppress: boolean }
  | { kind: 'none' } {
  if (report.kind === 'arf' && report.feedback) {
    const f = report.feedback;
    const facts: ComplaintFacts = { feedback_type: f.feedbackType };
    if (f.userAgent) facts.user_agent = f.userAgent;
    if (f.arrivalDate) facts.arrival_date = f.arrivalDate;
    return { kind: 'complaint', facts };
  }
  const address = rcpt.address.toLowerCase();
  const entry =
    report.recipients.find((r) => r.address.toLowerCase() === address && r.permanent) ??
    report.recipients.find((r) => r.permanent);
  if (!entry || rcpt.state === 'bounced') return { kind: 'none' };
  return { kind: 'bounce', reply: reportReply(entry), suppress: entry.suppress };
}
