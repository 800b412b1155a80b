import { simpleParser, type ParsedMail } from 'mailparser';
import { parseFieldBlocks, field, fields, typedAddress } from './fields.js';
import { MAX_REPORT_BYTES } from './dsn.js';
import { MIME_LIMITS, parserInput, tooComplex } from './limits.js';

export interface ArfReport {
  feedbackType: string;
  userAgent?: string;
  version?: string;
  arrivalDate?: string;
  originalMailFrom?: string;
  originalRcptTo: string[];
  sourceIp?: string;
  reportedDomain?: string;
  /** From the attached original (message/rfc822 or text/rfc822-headers). */
  original: { returnPath?: string; messageId?: string; to?: string };
}

function header(text: string, name: string): string | undefined {
  const m = new RegExp(`^${name}:[ \\t]*(.*(?:\\r?\\n[ \\t].*)*)`, 'im').exec(text);
  return m ? m[1]!.replace(/\r?\n[ \t]+/g, ' ').trim() : undefined;
}

/** Parses an RFC 5965 feedback report; null when it is not one (or lacks Feedback-Type). */
export async function parseArf(raw: Buffer): Promise<ArfReport | null> {
  if (tooComplex(raw)) return null;
  let mail: ParsedMail;
  try {
    mail = await simpleParser(parserInput(raw.subarray(0, MAX_REPORT_BYTES)), { ...MIME_LIMITS, skipHtmlToText: true, skipTextLinks: true } as Parameters<typeof simpleParser>[1]);
  } catch {
    return null;
  }
  const fb = mail.attachments.find((a) => a.contentType === 'message/feedback-report');
  if (!fb) return null;
  const block = parseFieldBlocks(fb.content.toString('utf8'))[0] ?? [];
  const feedbackType = field(block, 'feedback-type')?.toLowerCase().split(/\s/)[0];
  if (!feedbackType) return null;
  const report: ArfReport = { feedbackType, originalRcptTo: fields(block, 'original-rcpt-to').map((v) => typedAddress(v)!).filter(Boolean).map((a) => a.toLowerCase()), original: {} };
  const set = (key: 'userAgent' | 'version' | 'arrivalDate' | 'sourceIp' | 'reportedDomain', v: string | undefined) => {
    if (v) report[key] = v;
  };
  set('userAgent', field(block, 'user-agent'));
  set('version', field(block, 'version'));
  set('arrivalDate', field(block, 'arrival-date') ?? field(block, 'received-date'));
  set('sourceIp', field(block, 'source-ip'));
  set('reportedDomain', field(block, 'reported-domain'));
  const omf = typedAddress(field(block, 'original-mail-from'));
  if (omf) report.originalMailFrom = omf.toLowerCase();
  const orig = mail.attachments.find((a) => a.contentType === 'message/rfc822' || a.contentType === 'text/rfc822-headers');
  // mailparser inlines a message/rfc822 part marked inline instead of listing it: then read the
  // original's header block straight from the report, after that part's own headers.
  let text = orig?.content.toString('utf8');
  if (!text) {
    const s = raw.subarray(0, MAX_REPORT_BYTES).toString('utf8');
    const at = s.search(/^Content-Type:\s*(message\/rfc822|text\/rfc822-headers)/im);
    if (at >= 0) text = s.slice(at).split(/\r?\n\r?\n/).slice(1).join('\r\n\r\n');
  }
  if (text) {
    const head = text.split(/\r?\n\r?\n/)[0] ?? '';
    const rp = typedAddress(header(head, 'Return-Path'));
    const mid = /<[^>\s]+>/.exec(header(head, 'Message-ID') ?? '')?.[0];
    const to = header(head, 'To');
    if (rp) report.original.returnPath = rp.toLowerCase();
    if (mid) report.original.messageId = mid;
    if (to) report.original.to = to;
  }
  return report;
}
