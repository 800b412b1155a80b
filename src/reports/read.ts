/**
 * The report reader: what a message that came back says, whichever address it came to. A
 * delivery report (RFC 3464, or the plain text of the many MTAs that write none), a complaint
 * (ARF, RFC 5965, and the formats of the providers that send something else), or neither. Pure:
 * bytes in, a value out, no I/O; the daemon's listener and `posthaste reports parse` both call it.
 */
import { classifyReply } from '../domain/classify.js';
import { decodeWords, field, parseMessage, partText, walk, type Field, type Part } from './mime.js';
import { looksLikeDsnFields, readDsnFields, routable, typedAddress, type DsnBlock } from './dsn-fields.js';
import type { Action, Report, ReportRecipient } from '../domain/report.js';
import { coreOf, diagnosticsOf, mentionedAddresses, notificationOf, replyParts, smtpStage, tidy } from './bounce-text.js';
import { MAX_REPORT_BYTES, tooComplex } from './limits.js';
import { DEFAULT_SUPPRESSION, suppressFor, type SuppressionPolicy } from '../domain/outcome.js';

const NONE: Report = { kind: 'none', originalMessageId: null, recipients: [], feedback: null, originalSender: null };

/** Reads a report. Never throws: what cannot be read is `kind: 'none'`. */
export function readReport(raw: Buffer, policy: SuppressionPolicy = DEFAULT_SUPPRESSION): Report {
  if (tooComplex(raw)) return NONE;
  let root: Part;
  try {
    root = parseMessage(raw.subarray(0, MAX_REPORT_BYTES).toString('latin1'));
  } catch {
    return NONE;
  }
  const parts = walk(root);
  const original = originalOf(parts);
  return complaint(root, parts, original) ?? bounce(root, parts, original, policy) ?? { ...NONE, originalMessageId: original.messageId, originalSender: original.sender };
}

// ---------------------------------------------------------------------------------------------
// The original message: the attached copy, its headers, or the copy in the text.

interface Original {
  headers: Field[];
  messageId: string | null;
  /** Return-Path (or, failing it, From) of the original. */
  sender: string | null;
}

function originalOf(parts: Part[]): Original {
  let headers: Field[] = [];
  const attached = parts.find(
    (p) => p.type === 'message/rfc822' || p.type === 'message/global' || p.type === 'text/rfc822-headers' || p.type === 'text/rfc822-header' || p.type === 'message/global-headers',
  );
  if (attached) headers = attached.children[0]?.headers ?? parseMessageHeaders(attached.body);
  else {
    // The copy in a plain-text bounce, after its marker.
    for (const p of parts) {
      if (!p.type.startsWith('text/plain') || p.depth > 2) continue;
      const { original } = notificationOf(partText(p));
      if (original) {
        headers = parseMessageHeaders(original.replace(/^\s+/, ''));
        if (headers.length) break;
      }
    }
  }
  const id = /<([^<>\s]+@[^<>\s]+)>/.exec(field(headers, 'message-id') ?? '')?.[1] ?? /^\s*([^<>\s]+@[^<>\s]+)\s*$/.exec(field(headers, 'message-id') ?? '')?.[1] ?? null;
  const sender = typedAddress(field(headers, 'return-path')) ?? null;
  return { headers, messageId: id, sender };
}

function parseMessageHeaders(text: string): Field[] {
  const head = text.split(/\r?\n\r?\n/)[0] ?? '';
  return parseMessage(head + '\r\n\r\n').headers;
}

// ---------------------------------------------------------------------------------------------
// Complaints.

/** Apple Mail's one-click unsubscribe mail ("X-Apple-Unsubscribe: true"), answered as an opt-out. */
const APPLE_UNSUBSCRIBE = 'x-apple-unsubscribe';
/** Microsoft's JMRP complaints: the complained-of message, its recipient in X-HmXmrOriginalRecipient. */
const MICROSOFT_RECIPIENT = 'x-hmxmroriginalrecipient';

function complaint(root: Part, parts: Part[], original: Original): Report | null {
  const fb = parts.find(
    (p) => p.type === 'message/feedback-report' || (p.type === 'text/plain' && /^feedback-type:/im.test(p.body) && /^(user-agent|version|original-mail-from|arrival-date):/im.test(p.body)),
  );
  // RFC 5965 requires Feedback-Type: a report without one is malformed, and no complaint comes of it.
  const fields = fb ? readFields(fb.body) : [];
  const feedbackType = field(fields, 'feedback-type')?.toLowerCase().split(/[\s;]/)[0];
  if (fb && feedbackType) {
    const rcptTo = fields
      .filter((f) => f.name === 'original-rcpt-to' || f.name === 'removal-recipient')
      .map((f) => typedAddress(f.value))
      .filter((a): a is string => !!a);
    const recipient = rcptTo[0] ?? typedAddress(field(original.headers, 'to')) ?? null;
    return {
      kind: 'arf',
      originalMessageId: original.messageId,
      recipients: [],
      feedback: {
        feedbackType,
        userAgent: field(fields, 'user-agent') ?? null,
        arrivalDate: field(fields, 'arrival-date') ?? field(fields, 'received-date') ?? null,
        recipient: recipient?.toLowerCase() ?? null,
      },
      originalSender: typedAddress(field(fields, 'original-mail-from'))?.toLowerCase() ?? original.sender?.toLowerCase() ?? null,
    };
  }
  const jmrp = parts.find((p) => p.depth > 0 && field(p.headers, MICROSOFT_RECIPIENT));
  if (jmrp) {
    return {
      kind: 'arf',
      originalMessageId: original.messageId,
      recipients: [],
      feedback: { feedbackType: 'abuse', userAgent: null, arrivalDate: null, recipient: typedAddress(field(jmrp.headers, MICROSOFT_RECIPIENT))?.toLowerCase() ?? null },
      originalSender: original.sender?.toLowerCase() ?? null,
    };
  }
  if (/^true$/i.test(field(root.headers, APPLE_UNSUBSCRIBE) ?? '')) {
    const from = /<?([^<>\s]+@[^<>\s]+)>?\s*$/.exec(field(root.headers, 'from') ?? '')?.[1] ?? null;
    return {
      kind: 'arf',
      originalMessageId: null,
      recipients: [],
      feedback: { feedbackType: 'opt-out', userAgent: 'Apple Mail', arrivalDate: null, recipient: from?.toLowerCase() ?? null },
      originalSender: null,
    };
  }
  return null;
}

function readFields(text: string): Field[] {
  return parseMessage(text.replace(/^\s+/, '') + '\r\n\r\n').headers;
}

// ---------------------------------------------------------------------------------------------
// Bounces.

/**
 * Signs that a message is a delivery report, from its envelope and headers: the null sender or
 * a mailer-daemon, the subjects MTAs give their reports, and the report's own headers.
 */
const BOUNCE_FROM = /mailer-daemon|post_?master|mail ?delivery|mail ?administrator|mail ?system|daemon|bounce|returned|notification|noreply|no-reply|automated|system administrator/i;
/**
 * Postfix: "Undelivered Mail Returned to Sender"; Sendmail: "Returned mail: see transcript for details"; qmail: "failure notice";
 * Exim: "Mail delivery failed: returning message to sender"; Exchange: "Undeliverable: ..."; Google: "Delivery Status Notification (Failure)";
 * Domino: "DELIVERY FAILURE: ..."; ezweb: "Mail System Error - Returned Mail"; x6: "There was an error sending your mail".
 */
const BOUNCE_SUBJECT =
  /undeliver|mail failed|undelivered|returned (mail|to sender)|return(ed)? mail|failure notice|delivery (status|failure|failed|notification|report|problem|has failed|error)|mail delivery failed|could not (be )?deliver|not delivered|non[- ]?delivery|delivery (to|of) .*(failed|delayed)|mail (system )?error|error sending|delayed mail|warning: could not send|cannot send message|message (not )?(delivered|delivery)|rejected|returned|bounce|nondeliverable|unable to deliver|failed delivery|mail failure|delivery notification|problem delivering/i;

/**
 * Phrases a bounce's text uses to say a message did not reach someone, by MTA.
 */
const FAILURE_TEXT: RegExp[] = [
  // Postfix: "I'm sorry to have to inform you that your message could not be delivered to one or more recipients."
  /could not be delivered|couldn.t be delivered|was not delivered|wasn.t delivered|has not been delivered|could not deliver|unable to deliver|undeliverable/i,
  // qmail: "I'm afraid I wasn't able to deliver your message to the following addresses."
  /wasn.t able to deliver|was unable to deliver|not able to deliver/i,
  // Exim: "The following address(es) failed"; Sendmail: "----- The following addresses had permanent fatal errors -----"
  /following (address|recipient)\(?e?s?\)? (failed|had|returned|could not|were|was)|permanent (fatal )?errors?|delivery (has )?failed|failed permanently|delivery to the following recipients? (failed|has been delayed)/i,
  // Exchange: "did not reach the following recipient(s)"; Domino: "was not delivered to:"
  /did not reach|not reach the following|delivery has failed to these recipients/i,
  // DragonFly: "There was an error delivering your mail to <x>"; OpenSMTPD: "An error has occurred while attempting to deliver"
  /error (has occurred )?(while )?(attempting to )?deliver|error delivering|trouble delivering|rejected by|returned mail|delivery (status|failure)/i,
  // Sendmail delay warnings: "Warning: message still undelivered after 4 hours"; Postfix: "Delayed Mail (still being retried)"
  /still (being retried|undelivered)|will (continue|keep) trying|has been delayed|delayed|not yet been delivered|will be retried/i,
  // Google Groups, Gmail: "Delivery to the following recipient failed permanently"
  /message (was )?(rejected|bounced|blocked|returned)|mail failure|mailbox (is )?full|user unknown|no such user/i,
];

/** A delay warning, not a failure: the reporting MTA is still trying. */
const DELAY_TEXT =
  /warning message only|you do not need to resend|still (being retried|undelivered|trying)|will (continue|keep) trying|will (be )?retr(y|ied)|has been delayed|delivery (to the following recipients? )?(has been )?delayed|not yet been delivered|delayed mail|warning: (could not send|message still)|temporary failure,? (will|retrying)|retry (for|until)/i;

function fromAddress(from: string): string {
  return (/[^\s<>"',;:()]+@[^\s<>"',;:()]+/.exec(from)?.[0] ?? '').toLowerCase();
}

function isNullSender(headers: Field[]): boolean {
  const rp = field(headers, 'return-path');
  return rp !== undefined && /^<?\s*>?$/.test(rp.trim());
}

function notificationText(parts: Part[]): string {
  // Human-readable parts outside the attached original: plain text, else HTML without its tags.
  const own = parts.filter((p) => !insideMessage(parts, p));
  const plain = own.filter((p) => p.children.length === 0 && (p.type === 'text/plain' || p.type === 'text/enriched'));
  const html = own.filter((p) => p.children.length === 0 && p.type === 'text/html');
  const texts = (plain.length ? plain : html).map((p) => (p.type === 'text/html' ? htmlText(partText(p)) : partText(p)));
  return texts.join('\n');
}

function insideMessage(parts: Part[], p: Part): boolean {
  // A part is inside an attached message when a message/* part before it in document order is its ancestor.
  let depth = p.depth;
  for (let i = parts.indexOf(p) - 1; i >= 0 && depth > 0; i--) {
    const q = parts[i]!;
    if (q.depth < depth) {
      if (q.type.startsWith('message/') && q.type !== 'message/delivery-status' && q.type !== 'message/global-delivery-status') return true;
      depth = q.depth;
    }
  }
  return false;
}

function htmlText(html: string): string {
  return html
    .replace(/<(style|script|head)[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<br\s*\/?>|<\/(p|div|tr|li|h\d)>/gi, '\n')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
}

function bounce(root: Part, parts: Part[], original: Original, policy: SuppressionPolicy): Report | null {
  const headers = root.headers;
  const subject = decodeWords(field(headers, 'subject') ?? '');
  const from = field(headers, 'from') ?? '';
  const reportType = root.type === 'multipart/report' && /delivery-status/i.test(root.params['report-type'] ?? '');
  const statusParts = parts.filter(
    (p) => p.type === 'message/delivery-status' || p.type === 'message/global-delivery-status' || (p.type === 'text/plain' && !insideMessage(parts, p) && looksLikeDsnFields(p.body)),
  );
  const blocks = statusParts.flatMap((p) => readDsnFields(p.type === 'message/global-delivery-status' ? partText(p) : p.body).recipients);
  const { notification } = notificationOf(notificationText(parts));
  const failedHeader = headers
    .filter((f) => f.name === 'x-failed-recipients')
    .flatMap((f) => f.value.split(/[,\s]+/))
    .map((a) => a.replace(/^<|>$/g, ''))
    .filter((a) => a.includes('@'));

  const signs = [
    reportType,
    statusParts.length > 0,
    failedHeader.length > 0,
    isNullSender(headers) || BOUNCE_FROM.test(from),
    BOUNCE_SUBJECT.test(subject),
    FAILURE_TEXT.some((re) => re.test(notification)),
  ];
  const structural = signs[0] || signs[1] || signs[2];
  // Without a report's own structure, two of the sender, the subject and the text must say so:
  // an auto-reply from a postmaster, or a message that merely quotes a bounce, is not one.
  if (!structural && !((signs[3] || signs[4]) && signs[5]) && !(signs[3] && signs[4])) return null;

  // Not-recipients: the report's own addresses and the original's sender.
  const own = new Set<string>();
  for (const name of ['from', 'to', 'cc', 'reply-to', 'return-path', 'sender'])
    for (const f of headers.filter((h) => h.name === name)) for (const m of f.value.matchAll(/[^\s<>"',;:()]+@[^\s<>"',;:()]+/g)) own.add(m[0].toLowerCase().replace(/\.$/, ''));
  for (const name of ['from', 'return-path', 'sender', 'reply-to', 'errors-to'])
    for (const m of (field(original.headers, name) ?? '').matchAll(/[^\s<>"',;:()]+@[^\s<>"',;:()]+/g)) own.add(m[0].toLowerCase());
  const exclude = (a: string) => own.has(a);

  let mentions = mentionedAddresses(notification, exclude);
  // Someone who wrote to themselves: the only address named is the one the bounce came back to.
  if (mentions.length === 0) mentions = mentionedAddresses(notification, (a) => a === fromAddress(from));
  const blocks2 = blocks.length ? blocks : [];
  const text = diagnosticsOf(notification, mentions);
  const delayed = DELAY_TEXT.test(subject) || (!blocks2.length && DELAY_TEXT.test(notification) && !/permanent|fatal|given up|giving up/i.test(notification));

  const recipients: ReportRecipient[] = [];
  const single = (blocks2.length || mentions.length) <= 1;
  const add = (address: string, b: DsnBlock | null) => {
    const key = address.toLowerCase();
    if (recipients.some((r) => r.address.toLowerCase() === key)) return;
    const block = text.get(key) ?? (mentions.length === 0 && !b?.diagnosticCode ? notification : undefined);
    recipients.push(verdict(address, b, block, single, delayed, subject, policy));
  };
  // The final recipient, unless it is not an address on the Internet and the original one is.
  // A block that states neither an action nor a status nor a diagnostic says nothing that happened (RFC 3464 requires the first two).
  for (const b of blocks2) {
    if (!b.action && !b.status && !b.diagnosticCode) continue;
    add(!routable(b.finalRecipient) && routable(b.originalRecipient) ? b.originalRecipient! : (b.finalRecipient ?? b.originalRecipient!), b);
  }
  if (!recipients.length) {
    for (const m of mentions) add(m.address, null);
    for (const a of failedHeader) add(a, null);
  }
  // Sendmail 5 names nobody in its text: the recipients are those of the copy it returns.
  if (!recipients.length)
    for (const name of ['to', 'cc'])
      for (const m of (field(original.headers, name) ?? '').matchAll(/[^\s<>"',;:()]+@[^\s<>"',;:()]+\.[^\s<>"',;:()]+/g)) if (!exclude(m[0].toLowerCase())) add(m[0], null);
  if (!recipients.length) return null;
  return { kind: 'dsn', originalMessageId: original.messageId, recipients, feedback: null, originalSender: original.sender?.toLowerCase() ?? null };
}

function verdict(address: string, b: DsnBlock | null, textBlock: string | undefined, single: boolean, delayed: boolean, subject: string, policy: SuppressionPolicy): ReportRecipient {
  const core = textBlock !== undefined ? coreOf(textBlock) : null;
  const diagnostic = b?.diagnosticCode ?? core?.text ?? null;
  const fromText = textBlock !== undefined ? replyParts(textBlock) : { replyCode: null, status: null };
  const fromDiag = diagnostic ? replyParts(diagnostic) : { replyCode: null, status: null };
  const replyCode = fromDiag.replyCode ?? fromText.replyCode;
  let status = b?.status ?? fromDiag.status ?? fromText.status ?? null;
  const action: Action = b?.action ?? (delayed ? 'delayed' : 'failed');
  // A generic Status (x.0.0) says less than the reply it came with.
  if (status && /^[245]\.0\.0$/.test(status) && fromDiag.status && fromDiag.status[0] === status[0]) status = fromDiag.status;
  if (!status) status = replyCode ? `${String(replyCode)[0]}.0.0` : action === 'failed' ? '5.0.0' : action === 'delayed' ? '4.0.0' : action === 'delivered' ? '2.0.0' : null;
  const facts = { code: replyCode ?? 0, enhanced_code: status ?? '' };
  let classification = classifyReply({ ...facts, message: diagnostic ?? '' });
  // The text about this recipient, where the reply alone says too little (with several
  // recipients, only up to the reply it quotes: what follows is about the others).
  const about = core ? (single ? textBlock! : core.context) : undefined;
  if (classification === 'other' && about) classification = classifyReply({ ...facts, message: tidy(about) });
  if (classification === 'other' || classification === 'timeout' || classification === 'connection_failure') {
    // Sendmail: "Returned mail: Cannot send message for 5 days"; the cause behind was temporary.
    if (classifyReply({ code: 0, enhanced_code: '', message: subject }) === 'expired') classification = 'expired';
  }
  // "Diagnostic-Code: x-unix; ...": a local delivery program's output (procmail, a script), which
  // says nothing certain about the address whatever its words.
  if (b?.diagnosticType === 'x-unix' && classification === 'unknown_recipient') classification = 'other';
  // What the reply answered: said in the diagnostic, or in the text about this recipient.
  const stage = smtpStage(diagnostic ?? '') ?? (about ? smtpStage(about) : null);
  // Refused at MAIL FROM, or on connecting: the sender or the connection, whatever the words say
  // (Exim: "SMTP error from remote mail server after MAIL FROM:<a@b>: 553 5.1.0 b does not exist").
  if ((stage === 'mail' || stage === 'connect') && ['unknown_recipient', 'dns_failure', 'mailbox_disabled', 'mailbox_full'].includes(classification))
    classification = stage === 'mail' ? 'policy' : 'connection_failure';
  const permanent = action === 'failed';
  const suppress = permanent && (status ?? '5')[0] === '5' && suppressFor({ classification, status, stage, text: diagnostic ?? '' }, policy);
  return { address, action, status, replyCode, diagnostic: diagnostic ? tidy(diagnostic) : null, classification, permanent, suppress };
}
