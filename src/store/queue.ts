import { BOUND_LIMIT, type Db } from './db.js';
import { recordEvent } from './events.js';
import { addSuppression } from './suppressions.js';
import { retryDelay, type Outcome, type Reply } from '../domain/outcome.js';
import { isoTime } from '../lib/clock.js';
import type { MessageEventBase } from '../domain/events.js';

/** A claimed recipient with what delivery needs. */
export interface Claimed {
  id: number;
  messageRowId: number;
  address: string;
  domain: string;
  attempts: number;
}

export interface QueuedMessage {
  id: number;
  customerId: number;
  messageId: string;
  sandbox: boolean;
  fromHeader: string;
  senderDomain: string;
  subject: string;
  metadata: Record<string, string>;
  request: Buffer | string;
  raw: Buffer | null;
  createdAt: number;
  tags: string[];
}

/** Releases every claim (at start: claims of a process that died). Returns how many. */
export function releaseClaims(db: Db): number {
  return db.statement('DELETE FROM recipient_claims').run().changes;
}

/**
 * Claims up to `limit` due recipients, earliest due first: reads them through the due index and
 * records the claims in `recipient_claims`, in one immediate transaction (so no two workers get
 * one recipient). The recipient rows themselves are not written until the outcome.
 */
export function claimDue(db: Db, worker: string, now: number, limit: number): Claimed[] {
  const due = db.statement(
    `SELECT r.id, r.message_id, r.address, r.domain, r.attempts FROM recipients r
     WHERE r.state IN ('queued', 'deferred') AND r.next_attempt_at <= ?
       AND NOT EXISTS (SELECT 1 FROM recipient_claims c WHERE c.recipient_id = r.id)
     ORDER BY r.next_attempt_at ${BOUND_LIMIT}`,
  );
  const claim = db.statement('INSERT INTO recipient_claims (recipient_id, worker, claimed_at) VALUES (?, ?, ?)');
  // Nothing due (the usual poll): a read, without taking the write lock, which waiting for would
  // block the event loop in SQLite's busy handler while the writer thread commits.
  if (!db.sqlite.inTransaction && due.all(now, 1).length === 0) return [];
  return db.tx(() => {
    const rows = due.all(now, limit) as Array<{ id: number; message_id: number; address: string; domain: string; attempts: number }>;
    for (const r of rows) claim.run(r.id, worker, now);
    return rows.map((r) => ({ id: r.id, messageRowId: r.message_id, address: r.address, domain: r.domain, attempts: r.attempts }));
  });
}

export function loadMessages(db: Db, ids: number[]): Map<number, QueuedMessage> {
  const out = new Map<number, QueuedMessage>();
  const st = db.statement(
    'SELECT id, customer_id, message_id, sandbox, from_header, sender_domain, subject, metadata, request, raw, created_at, tags FROM messages WHERE id = ?',
  );
  for (const id of new Set(ids)) {
    const m = st.get(id) as
      | { id: number; customer_id: number; message_id: string; sandbox: number; from_header: string; sender_domain: string; subject: string; metadata: string; request: Buffer | string; raw: Buffer | null; created_at: number; tags: string | null }
      | undefined;
    if (!m) continue;
    out.set(id, {
      id: m.id,
      customerId: m.customer_id,
      messageId: m.message_id,
      sandbox: m.sandbox === 1,
      fromHeader: m.from_header,
      senderDomain: m.sender_domain,
      subject: m.subject,
      metadata: JSON.parse(m.metadata) as Record<string, string>,
      request: m.request,
      raw: m.raw,
      createdAt: m.created_at,
      tags: m.tags ? (JSON.parse(m.tags) as string[]) : [],
    });
  }
  return out;
}

/** Keeps the composed message, so a retry sends the same bytes. */
export function storeRaw(db: Db, messageRowId: number, raw: Buffer): void {
  db.statement('UPDATE messages SET raw = ?, size = ? WHERE id = ? AND raw IS NULL').run(raw, raw.length, messageRowId);
}

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
    const update = db.statement(
      'UPDATE recipients SET state = ?, attempts = ?, next_attempt_at = ?, last_response = ?, updated_at = ? WHERE id = ?',
    );
    releaseClaim(db, r.id);
    switch (outcome.kind) {
      case 'delivered': {
        update.run('delivered', attempt, null, JSON.stringify(outcome.reply), now, r.id);
        const { classification: _c, ...response } = outcome.reply;
        emit('email.delivered', { ...base, response, mx: outcome.mx, tls: outcome.tls, attempt });
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
export function recordComplaint(
  db: Db,
  m: QueuedMessage,
  r: Pick<Claimed, 'id' | 'address'>,
  report: { feedback_type: string; user_agent?: string; arrival_date?: string },
  now: number,
): boolean {
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

function releaseClaim(db: Db, recipientId: number): void {
  db.statement('DELETE FROM recipient_claims WHERE recipient_id = ?').run(recipientId);
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
  const move = db.statement('UPDATE recipients SET next_attempt_at = ? WHERE id = ? AND next_attempt_at < ?');
  db.tx(() => {
    for (const { id, until } of items) {
      move.run(until, id, until);
      releaseClaim(db, id);
    }
  });
}
