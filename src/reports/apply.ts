import type { Db } from '../store/db.js';
import { loadMessages, recordAsyncBounce, recordComplaint } from '../store/queue.js';
import { recipientById, recipientsOfMessageId, storeReport } from '../store/inbound.js';
import { parseReturnToken } from '../domain/return-path.js';
import { classifyReply, parseReply } from '../outbound/classify.js';
import type { Reply } from '../domain/outcome.js';
import type { DsnReport } from './dsn.js';
import type { ArfReport } from './arf.js';
import { verpToken } from './fields.js';

export interface Envelope {
  mailFrom: string;
  rcptTo: string;
}

/** The reply a DSN recipient block states: Diagnostic-Code when it has an SMTP reply, else Status. */
export function dsnReply(r: DsnReport['recipients'][number]): Reply {
  const diag = r.diagnosticCode ?? '';
  const facts = /^\d{3}\b/.test(diag) ? parseReply(diag) : { code: 0, enhanced: '', text: diag };
  const enhanced = r.status ?? facts.enhanced;
  const code = facts.code || (enhanced.startsWith('5') ? 550 : enhanced.startsWith('4') ? 450 : 0);
  const reply = { code, enhanced_code: enhanced, message: facts.text || diag };
  return { ...reply, classification: classifyReply({ code, enhanced, text: reply.message }) };
}

/**
 * A bounce that came to `bounces+<token>@`: the token names exactly one recipient. `Action:
 * failed` gives `email.bounced` (async) and, when permanent and the address is at fault, a
 * suppression. Delay warnings and unmatched reports are kept, never bounced back.
 */
export function applyDsn(db: Db, secret: Buffer, report: DsnReport | null, raw: Buffer, env: Envelope, now: number): 'bounced' | 'recorded' {
  const token = verpToken(env.rcptTo);
  const rid = token ? parseReturnToken(secret, token) : undefined;
  const rcpt = rid !== undefined ? recipientById(db, rid) : undefined;
  const failed = report?.recipients.find((r) => r.action === 'failed');
  return db.tx(() => {
    storeReport(db, { kind: 'dsn', recipientId: rcpt?.id ?? null, mailFrom: env.mailFrom, rcptTo: env.rcptTo, summary: report ?? { unparsed: true }, raw }, now);
    if (!rcpt || !failed || rcpt.state === 'bounced') return 'recorded';
    const m = loadMessages(db, [rcpt.messageRowId]).get(rcpt.messageRowId);
    if (!m) return 'recorded';
    recordAsyncBounce(db, m, rcpt, dsnReply(failed), now);
    return 'bounced';
  });
}

/**
 * A spam complaint: matched by the VERP token of Original-Mail-From or of the attached
 * Return-Path, else by the attached Message-ID (and Original-Rcpt-To, or the only recipient).
 * `email.complained` at most once per message and recipient; the recipient is suppressed with it.
 */
export function applyArf(db: Db, secret: Buffer, report: ArfReport | null, raw: Buffer, env: Envelope, now: number): 'complained' | 'recorded' {
  let rcpt: ReturnType<typeof recipientById>;
  if (report) {
    for (const address of [report.originalMailFrom, report.original.returnPath]) {
      const token = verpToken(address);
      const id = token ? parseReturnToken(secret, token) : undefined;
      if (id !== undefined && (rcpt = recipientById(db, id))) break;
    }
    if (!rcpt && report.original.messageId) {
      const candidates = recipientsOfMessageId(db, report.original.messageId.replace(/^<|>$/g, ''));
      rcpt = candidates.find((c) => report.originalRcptTo.includes(c.address.toLowerCase())) ?? (candidates.length === 1 ? candidates[0] : undefined);
    }
  }
  return db.tx(() => {
    storeReport(db, { kind: 'arf', recipientId: rcpt?.id ?? null, mailFrom: env.mailFrom, rcptTo: env.rcptTo, summary: report ?? { unparsed: true }, raw }, now);
    if (!rcpt || !report) return 'recorded';
    const m = loadMessages(db, [rcpt.messageRowId]).get(rcpt.messageRowId);
    if (!m) return 'recorded';
    const data: { feedback_type: string; user_agent?: string; arrival_date?: string } = { feedback_type: report.feedbackType };
    if (report.userAgent) data.user_agent = report.userAgent;
    if (report.arrivalDate) data.arrival_date = report.arrivalDate;
    return recordComplaint(db, m, rcpt, data, now) ? 'complained' : 'recorded';
  });
}
