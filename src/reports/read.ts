/**
 * The report reader: what a message that came back says, whichever address it came to. A
 * delivery report (RFC 3464, or the plain text of the many MTAs that write none), a complaint
 * (ARF, RFC 5965, and the formats of the providers that send something else), or neither. Pure:
 * bytes in, a value out, no I/O; the daemon's listener and `posthaste reports parse` both call it.
 */

import { DEFAULT_SUPPRESSION, type SuppressionPolicy } from '../domain/outcome.js';
import type { Report, ReportRecipient } from '../domain/report.js';
import { MAX_REPORT_BYTES, tooComplex } from '../mime/limits.js';
import { decodeWords, type Field, field, type Part, parseMessage, partText, walk } from '../mime/reader.js';
import { diagnosticsOf, type Mention, notificationOf, replyParts } from './bounce-text.js';
import { looksLikeDsnFields, readDsnFields, typedAddress, undecorated } from './dsn-fields.js';
import { chooseRecipients } from './recipients.js';
import {
  AUTO_REPLY_SUBJECT,
  BOUNCE_FROM,
  BOUNCE_SUBJECT,
  DELAY_TEXT,
  FAILURE_TEXT,
  GIVEN_UP,
  isChallenge,
  isOneLineRefusal,
} from './signs.js';
import { verdict } from './verdict.js';

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
  return (
    complaint(root, parts, original) ??
    bounce(root, parts, original, policy) ?? {
      ...NONE,
      originalMessageId: original.messageId,
      originalSender: original.sender,
    }
  );
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
    (p) =>
      p.type === 'message/rfc822' ||
      p.type === 'message/global' ||
      p.type === 'text/rfc822-headers' ||
      p.type === 'text/rfc822-header' ||
      p.type === 'message/rfc822-headers' ||
      p.type === 'message/global-headers',
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
  const id =
    /<([^<>\s]+@[^<>\s]+)>/.exec(field(headers, 'message-id') ?? '')?.[1] ??
    /^\s*([^<>\s]+@[^<>\s]+)\s*$/.exec(field(headers, 'message-id') ?? '')?.[1] ??
    null;
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
  return arfReport(parts, original) ?? microsoftJmrp(parts, original) ?? appleUnsubscribe(root);
}

/** An RFC 5965 feedback report (or its fields in a plain-text part, as some senders write it). */
function arfReport(parts: Part[], original: Original): Report | null {
  const fb = parts.find(
    (p) =>
      p.type === 'message/feedback-report' ||
      (p.type === 'text/plain' &&
        /^feedback-type:/im.test(p.body) &&
        /^(user-agent|version|original-mail-from|arrival-date):/im.test(p.body)),
  );
  // RFC 5965 requires Feedback-Type: a report without one is malformed, and no complaint comes of it.
  const fields = fb ? readFields(fb.body) : [];
  const feedbackType = field(fields, 'feedback-type')?.toLowerCase().split(/[\s;]/)[0];
  if (!fb || !feedbackType) return null;
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
    originalSender:
      typedAddress(field(fields, 'original-mail-from'))?.toLowerCase() ?? original.sender?.toLowerCase() ?? null,
  };
}

/** Microsoft's JMRP: the complained-of message attached, its recipient in a header of its own. */
function microsoftJmrp(parts: Part[], original: Original): Report | null {
  const jmrp = parts.find((p) => p.depth > 0 && field(p.headers, MICROSOFT_RECIPIENT));
  if (!jmrp) return null;
  return {
    kind: 'arf',
    originalMessageId: original.messageId,
    recipients: [],
    feedback: {
      feedbackType: 'abuse',
      userAgent: null,
      arrivalDate: null,
      recipient: typedAddress(field(jmrp.headers, MICROSOFT_RECIPIENT))?.toLowerCase() ?? null,
    },
    originalSender: original.sender?.toLowerCase() ?? null,
  };
}

/** Apple Mail's one-click unsubscribe, from the recipient itself: an opt-out. */
function appleUnsubscribe(root: Part): Report | null {
  if (!/^true$/i.test(field(root.headers, APPLE_UNSUBSCRIBE) ?? '')) return null;
  const from = /<?([^<>\s]+@[^<>\s]+)>?\s*$/.exec(field(root.headers, 'from') ?? '')?.[1] ?? null;
  return {
    kind: 'arf',
    originalMessageId: null,
    recipients: [],
    feedback: {
      feedbackType: 'opt-out',
      userAgent: 'Apple Mail',
      arrivalDate: null,
      recipient: from?.toLowerCase() ?? null,
    },
    originalSender: null,
  };
}

function readFields(text: string): Field[] {
  return parseMessage(text.replace(/^\s+/, '') + '\r\n\r\n').headers;
}

// ---------------------------------------------------------------------------------------------
// Bounces.

/** The parts that hold a report's fields; XWall writes "message/xdelivery-status". */
const STATUS_TYPES = new Set(['message/delivery-status', 'message/global-delivery-status', 'message/xdelivery-status']);

function isNullSender(headers: Field[]): boolean {
  const rp = field(headers, 'return-path');
  return rp !== undefined && /^<?\s*>?$/.test(rp.trim());
}

function notificationText(parts: Part[]): string {
  // Human-readable parts outside the attached original: plain text, else HTML without its tags.
  const own = parts.filter((p) => !insideMessage(parts, p));
  const plain = own.filter((p) => p.children.length === 0 && (p.type === 'text/plain' || p.type === 'text/enriched'));
  const html = own.filter((p) => p.children.length === 0 && p.type === 'text/html');
  const texts = (plain.length ? plain : html).map((p) =>
    p.type === 'text/html' ? htmlText(partText(p)) : partText(p),
  );
  return texts.join('\n');
}

function insideMessage(parts: Part[], p: Part): boolean {
  // A part is inside an attached message when a message/* part before it in document order is its ancestor.
  let depth = p.depth;
  for (let i = parts.indexOf(p) - 1; i >= 0 && depth > 0; i--) {
    const q = parts[i]!;
    if (q.depth < depth) {
      if (q.type.startsWith('message/') && !STATUS_TYPES.has(q.type)) return true;
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
  const { statusParts, reports, blocks } = statusBlocks(parts);
  const { notification } = notificationOf(notificationText(parts));
  const failedHeader = failedRecipientsHeader(headers);
  const structural = reportType || statusParts.length > 0 || failedHeader.length > 0;
  const refusal = !structural && isOneLineRefusal(headers, isNullSender(headers), notification);
  if (!structural && !refusal && !saysBounce(headers, from, subject, notification)) return null;
  // A challenge-response system's request is no failure, whatever form it takes.
  const anyReply = [notification, ...blocks.map((b) => b.diagnosticCode ?? '')].some(
    (t) => replyParts(t).replyCode !== null,
  );
  const diagnosticTypes = blocks.map((b) => b.diagnosticType ?? '');
  if (isChallenge(headers, notification, diagnosticTypes, anyReply)) return null;

  const delayed =
    DELAY_TEXT.test(subject) || (!blocks.length && DELAY_TEXT.test(notification) && !GIVEN_UP.test(notification));
  const { chosen: named, mentions } = chooseRecipients({
    notification,
    blocks,
    failedHeader,
    headers,
    original: original.headers,
    from,
    envelopeSender: reports.find((r) => r.sender)?.sender,
  });
  // A one-line refusal names no one: the return path's token says whom it refused.
  const chosen = named.length || !refusal ? named : [{ address: '', originalRecipient: null, block: null }];
  if (!chosen.length) return null;
  return {
    kind: 'dsn',
    originalMessageId: original.messageId,
    recipients: verdicts(
      chosen,
      { mentions, notification, single: (blocks.length || mentions.length) <= 1, delayed, subject },
      policy,
    ),
    feedback: null,
    originalSender: original.sender?.toLowerCase() ?? null,
  };
}

/** The report's status parts (RFC 3464, or its fields in plain text), read, and the recipient blocks that say something happened. */
function statusBlocks(parts: Part[]) {
  const statusParts = parts.filter(
    (p) =>
      STATUS_TYPES.has(p.type) || (p.type === 'text/plain' && !insideMessage(parts, p) && looksLikeDsnFields(p.body)),
  );
  const reports = statusParts.map((p) =>
    readDsnFields(p.type === 'message/global-delivery-status' ? partText(p) : p.body),
  );
  // A block that states neither an action nor a status nor a diagnostic says nothing that happened (RFC 3464 requires the first two).
  const blocks = reports.flatMap((r) => r.recipients).filter((b) => b.action || b.status || b.diagnosticCode);
  return { statusParts, reports, blocks };
}

/** The addresses of X-Failed-Recipients (Exim's), undecorated. */
function failedRecipientsHeader(headers: Field[]): string[] {
  return headers
    .filter((f) => f.name === 'x-failed-recipients')
    .flatMap((f) => f.value.split(/[,\s]+/))
    .map((a) => undecorated(a))
    .filter((a) => a.includes('@'));
}

/**
 * Without a report's own structure, two of the sender, the subject and the text must say it is a
 * bounce: an auto-reply from a postmaster, or a message that merely quotes a bounce, is not one;
 * nor is what calls itself an auto-reply.
 */
function saysBounce(headers: Field[], from: string, subject: string, notification: string): boolean {
  const sender = isNullSender(headers) || BOUNCE_FROM.test(from);
  const subjectSays = BOUNCE_SUBJECT.test(subject);
  const textSays = FAILURE_TEXT.some((re) => re.test(notification));
  const twoSay = ((sender || subjectSays) && textSays) || (sender && subjectSays);
  return twoSay && !AUTO_REPLY_SUBJECT.test(subject);
}

/** Each chosen recipient once, with the text that speaks of it, judged (verdict.ts). */
function verdicts(
  chosen: ReturnType<typeof chooseRecipients>['chosen'],
  ctx: { mentions: Mention[]; notification: string; single: boolean; delayed: boolean; subject: string },
  policy: SuppressionPolicy,
): ReportRecipient[] {
  const text = diagnosticsOf(ctx.notification, ctx.mentions);
  const recipients: ReportRecipient[] = [];
  for (const c of chosen) {
    if (recipients.some((r) => r.address.toLowerCase() === c.address.toLowerCase())) continue;
    const block =
      text.get(c.address.toLowerCase()) ??
      (ctx.mentions.length === 0 && !c.block?.diagnosticCode ? ctx.notification : undefined);
    recipients.push(
      verdict(
        {
          address: c.address,
          originalRecipient: c.originalRecipient,
          block: c.block,
          text: block,
          single: ctx.single,
          delayed: ctx.delayed,
          subject: ctx.subject,
        },
        policy,
      ),
    );
  }
  return recipients;
}
