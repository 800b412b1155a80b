import type { Db } from './db.js';
import { recordEvent } from './events.js';
import { addSuppression } from './suppressions.js';
import { loadMessages, releaseClaim, type Claimed, type QueuedMessage } from './queue.js';
import { recipientById, storeReport } from './inbound.js';
import { retryDelay, type Outcome, type Reply } from '../domain/outcome.js';
import { reportReply, type Report, type ReportEnvelope } from '../domain/report.js';
import { parseReturnToken, verpToken } from '../domain/return-path.js';
import { isoTime } from '../lib/clock.js';
import type { MessageEventBase } from '../domain/events.js';

/*
 * Recipient state transitions: an attempt's outcome, a bounce or a complaint that came back
 * later, a suppression; each with its events, in one transaction. The queue's claims are in
 * queue.ts.
 */

export function eventBase(m: QueuedMessage, recipient: string, now: number): MessageEventBase {
  return {
    email_id: m.id,
    message_id: m.messageId,
    from: m.fromHeader,
    subject: m.subject,
    recipient,
    sandbox: m.sandbox,
    timestamp: isoTime(now),
    metadata: m.metadata,
    tags: m.tags,
  };
}

export interface OutcomePolicy {
  retrySchedule: number[];
  maxQueueTime: number;
}

/**
 * Records one attempt's outcome: the recipient's new state, its event, and a suppression with
 * `recipient.suppressed` when it is a hard bounce of a bad address, all in one transaction. A
 * sandbox message fires the same events but never touches the real suppression list.
 */
export function recordOutcome(db: Db, m: QueuedMessage, r: Claimed, outcome: Outcome, policy: OutcomePolicy, now: number): void {
  db.tx(() => {
    const attempt = r.attempts + 1;
    const base = eventBase(m, r.address, now);
    const emit = (type: Parameters<typeof recordEvent>[1]['type'], data: Record<string, unknown>) =>
      recordEvent(db, { customerId: m.customerId, type, data, messageRowId: m.id, recipientId: r.id, now });
    const update = db.statement('UPDATE recipients SET state = ?, attempts = ?, next_attempt_at = ?, last_response = ?, updated_at = ? WHERE id = ?');
    releaseClaim(db, r.id);
    switch (outcome.kind) {
      case 'delivered': {
        update.run('delivered', attempt, null, JSON.stringify(outcome.reply), now, r.id);
        const { classification: _c, ...response } = outcome.reply;
        emit('email.delivered', { ...base, response, mx: outcome.mx, tls: outcome.tls, tls_verified: outcome.tlsVerified, attempt });
        return;
      }
      case 'suppressed':
        update.run('suppressed', r.attempts, null, JSON.stringify({ suppressed: outcome.reason }), now, r.id);
        return;
      case 'deferred': {
        const next = now + retryDelay(policy.retrySchedule, attempt);
        if (next - m.createdAt > policy.maxQueueTime) {
          // Retrying would pass max_queue_time: give up now rather than after another wait.
          const reply = expiredReply(outcome.reply);
          update.run('bounced', attempt, null, JSON.stringify(reply), now, r.id);
          emit('email.bounced', { ...base, bounce_type: 'expired', response: reply });
          return;
        }
        update.run('deferred', attempt, next, JSON.stringify(outcome.reply), now, r.id);
        emit('email.deferred', { ...base, response: outcome.reply, attempt, next_attempt_at: isoTime(next) });
        return;
      }
      case 'bounced': {
        update.run('bounced', attempt, null, JSON.stringify(outcome.reply), now, r.id);
        emit('email.bounced', { ...base, bounce_type: outcome.bounceType, response: outcome.reply });
        if (outcome.suppress && outcome.bounceType !== 'expired') suppress(db, m, r, 'hard_bounce', now);
        return;
      }
    }
  });
}

/** Puts the recipient on the customer's list (not for sandbox mail) and fires recipient.suppressed. */
export function suppress(db: Db, m: QueuedMessage, r: Pick<Claimed, 'id' | 'address'>, reason: 'hard_bounce' | 'spam_complaint', now: number): void {
  const added = m.sandbox ? true : addSuppression(db, { customerId: m.customerId, address: r.address, reason, messageRowId: m.id, now });
  if (!added) return; // already suppressed: one recipient.suppressed per address
  recordEvent(db, {
    customerId: m.customerId,
    type: 'recipient.suppressed',
    data: { recipient: r.address, reason, email_id: m.id, message_id: m.messageId, sandbox: m.sandbox, timestamp: isoTime(now) },
    messageRowId: m.id,
    recipientId: r.id,
    now,
  });
}

/** The last temporary reply, restated as the give-up (RFC 3463 x.4.7: delivery time expired). */
function expiredReply(last: Reply): Reply {
  return { ...last, message: `Gave up after max_queue_time; last reply: ${last.code ? `${last.code} ` : ''}${last.message}`.trim() };
}

/** A bounce that came back after delivery (a DSN, or the simulator): no attempt is counted; `suppressAddress` as the report was read. */
export function recordAsyncBounce(db: Db, m: QueuedMessage, r: Pick<Claimed, 'id' | 'address'>, reply: Reply, suppressAddress: boolean, now: number): void {
  db.tx(() => {
    db.statement('UPDATE recipients SET state = ?, last_response = ?, updated_at = ? WHERE id = ?').run('bounced', JSON.stringify(reply), now, r.id);
    releaseClaim(db, r.id);
    recordEvent(db, { customerId: m.customerId, type: 'email.bounced', data: { ...eventBase(m, r.address, now), bounce_type: 'async', response: reply }, messageRowId: m.id, recipientId: r.id, now });
    if (suppressAddress) suppress(db, m, r, 'hard_bounce', now);
  });
}

/**
 * A spam complaint: `email.complained` at most once per message and recipient, and the
 * recipient suppressed in the same transaction. Returns false when it was already recorded.
 */
export function recordComplaint(db: Db, m: QueuedMessage, r: Pick<Claimed, 'id' | 'address'>, report: { feedback_type: string; user_agent?: string; arrival_date?: string }, now: number): boolean {
  return db.tx(() => {
    const seen = db.statement("SELECT 1 FROM events WHERE recipient_id = ? AND type = 'email.complained'").get(r.id);
    if (seen) return false;
    db.statement('UPDATE recipients SET state = ?, updated_at = ? WHERE id = ?').run('complained', now, r.id);
    releaseClaim(db, r.id);
    recordEvent(db, { customerId: m.customerId, type: 'email.complained', data: { ...eventBase(m, r.address, now), ...report }, messageRowId: m.id, recipientId: r.id, now });
    suppress(db, m, r, 'spam_complaint', now);
    return true;
  });
}

type Recipient = NonNullable<ReturnType<typeof recipientById>>;

/**
 * The recipient a report is about: named only by a token posthaste issued, the one of the return
 * path the report came to (a bounce), or of the original's envelope sender that the report quotes
 * (Original-Mail-From, or the original's Return-Path: a complaint). Nothing else ties a report to
 * a recipient: a Message-ID or an address is no secret (every recipient of a message sees both), so
 * a report that names them and carries no valid token is kept and changes nothing
 * (docs/inbound.md, "Which recipient a report is about").
 */
function recipientOf(db: Db, secret: Buffer, report: Report, env: ReportEnvelope): Recipient | undefined {
  for (const address of [env.rcptTo, report.originalSender]) {
    const token = verpToken(address);
    const id = token ? parseReturnToken(secret, token) : undefined;
    const r = id !== undefined ? recipientById(db, id) : undefined;
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
export function applyReport(db: Db, secret: Buffer, report: Report, raw: Buffer, env: ReportEnvelope, now: number): 'bounced' | 'complained' | 'recorded' {
  const rcpt = report.kind === 'none' ? undefined : recipientOf(db, secret, report, env);
  return db.tx(() => {
    // Kept as what it was read as; what could not be read, as what its address expects.
    const kind = report.kind !== 'none' ? report.kind : env.route === 'feedback' ? 'arf' : 'dsn';
    storeReport(db, { kind, recipientId: rcpt?.id ?? null, mailFrom: env.mailFrom, rcptTo: env.rcptTo, summary: report, raw }, now);
    if (!rcpt) return 'recorded';
    const m = loadMessages(db, [rcpt.messageRowId]).get(rcpt.messageRowId);
    if (!m) return 'recorded';
    if (report.kind === 'arf' && report.feedback) {
      const f = report.feedback;
      const data: { feedback_type: string; user_agent?: string; arrival_date?: string } = { feedback_type: f.feedbackType };
      if (f.userAgent) data.user_agent = f.userAgent;
      if (f.arrivalDate) data.arrival_date = f.arrivalDate;
      return recordComplaint(db, m, rcpt, data, now) ? 'complained' : 'recorded';
    }
    // The entry for this recipient, else the report's first failure (a bounce names the address as
    // the remote system saw it, which forwarding may have changed).
    const entry = report.recipients.find((r) => r.address.toLowerCase() === rcpt.address.toLowerCase() && r.permanent) ?? report.recipients.find((r) => r.permanent);
    if (!entry || rcpt.state === 'bounced') return 'recorded';
    recordAsyncBounce(db, m, rcpt, reportReply(entry), entry.suppress, now);
    return 'bounced';
  });
}
