import type { Outcome, Reply } from '../../domain/outcome.js';
import type { Report, ReportEnvelope } from '../../domain/report.js';
import {
  asyncBounceTransition,
  type ComplaintFacts,
  complaintTransition,
  keptByOperator,
  type OutcomePolicy,
  outcomeTransition,
  reportAction,
  suppressedEventData,
  type Transition,
} from '../../domain/transitions.js';
import { type Claimed, type QueuedMessage, reportKind, reportRecipientIds } from '../model.js';
import type { Db } from './db.js';
import { recordEvent } from './events.js';
import { recipientById, storeReport } from './inbound.js';
import { loadMessages, releaseClaim } from './queue.js';
import { countReputation } from './reputation.js';
import { addSuppression } from './suppressions.js';

/*
 * Recipient state transitions as the SQLite engine writes them: what domain/transitions.ts
 * decided (the new row, its events, a suppression with `recipient.suppressed`), in one
 * transaction. The queue's claims are in queue.ts.
 */

export type { OutcomePolicy };

/**
 * Writes a transition: the recipient row (fields the transition leaves out keep their values),
 * its claim released, its events, and the suppression it asks for, all in the caller's
 * transaction (or one of its own). A hold or delete an operator made while the attempt was in
 * flight is read first and outlives a deferral (domain/transitions.ts: keptByOperator).
 */
export function applyTransition(
  db: Db,
  m: QueuedMessage,
  r: Pick<Claimed, 'id' | 'address'>,
  given: Transition,
  now: number,
): void {
  db.tx(() => {
    const mark = db.get<{ state: string; held_at: number | null }>(
      'SELECT state, held_at FROM recipients WHERE id = ?',
      r.id,
    );
    const t = mark
      ? keptByOperator(given, { canceled: mark.state === 'canceled', held: mark.held_at !== null })
      : given;
    const { row } = t;
    db.run(
      `UPDATE recipients SET state = @state, attempts = coalesce(@attempts, attempts),
         next_attempt_at = CASE WHEN @setNext = 1 THEN @next ELSE next_attempt_at END,
         held_at = CASE WHEN @state IN ('queued', 'deferred') THEN held_at END,
         last_response = coalesce(@response, last_response), source_ip = coalesce(@source, source_ip),
         updated_at = @now WHERE id = @id`,
      {
        state: row.state,
        attempts: row.attempts ?? null,
        setNext: row.nextAttemptAt !== undefined ? 1 : 0,
        next: row.nextAttemptAt ?? null,
        response: row.lastResponse ?? null,
        source: row.sourceIp ?? null,
        now,
        id: r.id,
      },
    );
    releaseClaim(db, r.id);
    for (const e of t.events)
      recordEvent(db, {
        customerId: m.customerId,
        type: e.type,
        data: e.data,
        messageRowId: m.id,
        recipientId: r.id,
        now,
      });
    if (t.suppress) suppress(db, m, r, t.suppress, now);
    countReputation(db, m, t, now);
  });
}

/**
 * Records one attempt's outcome: the recipient's new state, its event, and a suppression with
 * `recipient.suppressed` when it is a hard bounce of a bad address, all in one transaction. A
 * sandbox message fires the same events but never touches the real suppression list.
 */
export function recordOutcome(
  db: Db,
  m: QueuedMessage,
  r: Claimed,
  outcome: Outcome,
  policy: OutcomePolicy,
  now: number,
): void {
  applyTransition(db, m, r, outcomeTransition(m, r, outcome, policy, now), now);
}

/** Puts the recipient on the customer's list (not for sandbox mail) and fires recipient.suppressed. */
export function suppress(
  db: Db,
  m: QueuedMessage,
  r: Pick<Claimed, 'id' | 'address'>,
  reason: 'hard_bounce' | 'spam_complaint',
  now: number,
): void {
  const added = m.sandbox
    ? true
    : addSuppression(db, { customerId: m.customerId, address: r.address, reason, messageRowId: m.id, now });
  if (!added) return; // already suppressed: one recipient.suppressed per address
  recordEvent(db, {
    customerId: m.customerId,
    type: 'recipient.suppressed',
    data: suppressedEventData(m, r.address, reason, now),
    messageRowId: m.id,
    recipientId: r.id,
    now,
  });
}

/** A bounce that came back after delivery (a DSN, or the simulator): no attempt is counted; `suppressAddress` as the report was read. */
export function recordAsyncBounce(
  db: Db,
  m: QueuedMessage,
  r: Pick<Claimed, 'id' | 'address'>,
  reply: Reply,
  suppressAddress: boolean,
  now: number,
): void {
  applyTransition(db, m, r, asyncBounceTransition(m, r, reply, suppressAddress, now), now);
}

/**
 * A spam complaint: `email.complained` at most once per message and recipient, and the
 * recipient suppressed in the same transaction. Returns false when it was already recorded.
 */
export function recordComplaint(
  db: Db,
  m: QueuedMessage,
  r: Pick<Claimed, 'id' | 'address'>,
  report: ComplaintFacts,
  now: number,
): boolean {
  return db.tx(() => {
    if (complainedAlready(db, r.id)) return false;
    applyTransition(db, m, r, complaintTransition(m, r, report, now), now);
    return true;
  });
}

/** Whether the recipient's complaint is recorded already (one `email.complained` per recipient). */
export function complainedAlready(db: Db, recipientId: number): boolean {
  return db.get("SELECT 1 FROM events WHERE recipient_id = ? AND type = 'email.complained'", recipientId) !== undefined;
}

type Recipient = NonNullable<ReturnType<typeof recipientById>>;

/** The recipient a report is about: the first its tokens name (model/inbound.ts, reportRecipientIds). */
function recipientOf(db: Db, secret: Buffer, report: Report, env: ReportEnvelope): Recipient | undefined {
  for (const id of reportRecipientIds(secret, report, env)) {
    const r = recipientById(db, id);
    if (r) return r;
  }
  return undefined;
}

/**
 * Applies a report that came to a return path or to the feedback address, whichever it is:
 * a complaint (`email.complained` at most once per message and recipient, and a suppression)
 * or a bounce (`email.bounced`, async, with a suppression when the report says the address is
 * to blame). Every report is kept (`inbound_reports`); delay warnings, success reports, reports
 * for recipients already bounced and reports that match no recipient change nothing.
 */
export function applyReport(
  db: Db,
  secret: Buffer,
  report: Report,
  raw: Buffer,
  env: ReportEnvelope,
  now: number,
): 'bounced' | 'complained' | 'recorded' {
  const rcpt = report.kind === 'none' ? undefined : recipientOf(db, secret, report, env);
  return db.tx(() => {
    const kind = reportKind(report, env);
    storeReport(
      db,
      { kind, recipientId: rcpt?.id ?? null, mailFrom: env.mailFrom, rcptTo: env.rcptTo, summary: report, raw },
      now,
    );
    if (!rcpt) return 'recorded';
    const m = loadMessages(db, [rcpt.messageRowId]).get(rcpt.messageRowId);
    if (!m) return 'recorded';
    const action = reportAction(report, rcpt);
    if (action.kind === 'complaint') return recordComplaint(db, m, rcpt, action.facts, now) ? 'complained' : 'recorded';
    if (action.kind === 'none') return 'recorded';
    recordAsyncBounce(db, m, rcpt, action.reply, action.suppress, now);
    return 'bounced';
  });
}
