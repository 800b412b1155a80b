import type { Db } from '../store/db.js';
import { loadMessages, recordAsyncBounce, recordComplaint } from '../store/queue.js';
import { recipientById, recipientsOfMessageId, storeReport } from '../store/inbound.js';
import { parseReturnToken, verpToken } from '../domain/return-path.js';
import type { Reply } from '../domain/outcome.js';
import type { Report, ReportRecipient } from './read.js';

/** The SMTP envelope a report arrived with, and which of posthaste's addresses it came to. */
export interface ReportEnvelope {
  mailFrom: string;
  rcptTo: string;
  route: 'bounce' | 'feedback';
}

type Recipient = NonNullable<ReturnType<typeof recipientById>>;

/** The reply a report states for one recipient, as events and the API show replies. */
export function reportReply(r: ReportRecipient): Reply {
  const code = r.replyCode ?? (r.status?.startsWith('5') ? 550 : r.status?.startsWith('4') ? 450 : 0);
  return { code, enhanced_code: r.status ?? '', message: r.diagnostic ?? '', classification: r.classification };
}

/**
 * The recipient a report is about: named by the token of the return path it came to (a bounce),
 * or of the original's envelope sender (Original-Mail-From, Return-Path: a complaint), or else
 * by the original's Message-ID and the address the report names (or the message's only recipient).
 */
function recipientOf(db: Db, secret: Buffer, report: Report, env: ReportEnvelope): Recipient | undefined {
  for (const address of [env.rcptTo, report.originalSender]) {
    const token = verpToken(address);
    const id = token ? parseReturnToken(secret, token) : undefined;
    const r = id !== undefined ? recipientById(db, id) : undefined;
    if (r) return r;
  }
  if (!report.originalMessageId) return undefined;
  const candidates = recipientsOfMessageId(db, report.originalMessageId);
  const named = new Set([...report.recipients.map((r) => r.address.toLowerCase()), ...(report.feedback?.recipient ? [report.feedback.recipient] : [])]);
  return candidates.find((c) => named.has(c.address.toLowerCase())) ?? (candidates.length === 1 ? candidates[0] : undefined);
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
