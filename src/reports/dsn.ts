import { simpleParser, type ParsedMail } from 'mailparser';
import { parseFieldBlocks, field, typedAddress } from './fields.js';
import { MIME_LIMITS, parserInput, tooComplex } from './limits.js';

export type DsnAction = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';

export interface DsnRecipient {
  finalRecipient?: string;
  originalRecipient?: string;
  action: DsnAction;
  status?: string;
  diagnosticCode?: string;
  remoteMta?: string;
}

export interface DsnReport {
  /** true: RFC 3464 multipart/report; false: read from a plain-text bounce. */
  standard: boolean;
  reportingMta?: string;
  recipients: DsnRecipient[];
  /** Message-ID of the original, from the attached message or headers. */
  originalMessageId?: string;
}

/** Misspellings seen in the wild (sisimai), mapped to RFC 3464 actions. */
const ACTIONS: Record<string, DsnAction> = {
  failed: 'failed', failure: 'failed', delayed: 'delayed', expired: 'delayed', delivered: 'delivered', deliverable: 'delivered', relayed: 'relayed', expanded: 'expanded',
};

export const MAX_REPORT_BYTES = 10 * 1024 * 1024;

async function parse(raw: Buffer): Promise<ParsedMail> {
  // Bounded: the parser's limits on header size and part count keep a hostile report cheap.
  return simpleParser(parserInput(raw.subarray(0, MAX_REPORT_BYTES)), { ...MIME_LIMITS, keepDeliveryStatus: true, skipHtmlToText: true, skipTextLinks: true, maxHtmlLengthToParse: 1024 * 1024 } as Parameters<typeof simpleParser>[1]);
}

function originalMessageId(text: string | undefined): string | undefined {
  const m = /^Message-ID:\s*(<[^>\r\n]+>)/im.exec(text ?? '');
  return m?.[1];
}

/**
 * Parses a bounce: RFC 3464 (`multipart/report; report-type=delivery-status`), or, failing that,
 * the common plain-text forms (qmail, Yahoo, old Exchange) with a status code in the text.
 * Returns null when it is not a bounce at all.
 */
export async function parseDsn(raw: Buffer): Promise<DsnReport | null> {
  if (tooComplex(raw)) return null; // a MIME bomb is not a bounce worth parsing
  let mail: ParsedMail;
  try {
    mail = await parse(raw);
  } catch {
    return null;
  }
  const status = mail.attachments.find((a) => a.contentType === 'message/delivery-status' || a.contentType === 'message/global-delivery-status');
  const originalPart = mail.attachments.find((a) => a.contentType === 'message/rfc822' || a.contentType === 'text/rfc822-headers');
  const origText = originalPart?.content.toString('utf8');
  if (status) {
    const blocks = parseFieldBlocks(status.content.toString('utf8'));
    const [perMessage, ...perRecipient] = blocks;
    const recipients: DsnRecipient[] = [];
    for (const b of perRecipient) {
      const action = ACTIONS[(field(b, 'action') ?? '').toLowerCase().split(/\s/)[0]!];
      if (!action) continue;
      const r: DsnRecipient = { action };
      const fr = typedAddress(field(b, 'final-recipient'));
      const or = typedAddress(field(b, 'original-recipient'));
      const st = /^([245]\.\d{1,3}\.\d{1,3})/.exec(field(b, 'status') ?? '')?.[1];
      const dc = field(b, 'diagnostic-code');
      const rm = typedAddress(field(b, 'remote-mta'));
      if (fr) r.finalRecipient = fr.toLowerCase();
      if (or) r.originalRecipient = or.toLowerCase();
      if (st) r.status = st;
      if (dc) r.diagnosticCode = dc.replace(/^smtp;\s*/i, '').replace(/\s+/g, ' ').trim();
      if (rm) r.remoteMta = rm;
      recipients.push(r);
    }
    if (recipients.length === 0) return null;
    const report: DsnReport = { standard: true, recipients };
    const mta = typedAddress(perMessage && field(perMessage, 'reporting-mta'));
    if (mta) report.reportingMta = mta;
    const mid = originalMessageId(origText);
    if (mid) report.originalMessageId = mid;
    return report;
  }
  return parsePlainBounce(mail, origText);
}

/** qmail, Yahoo and old Exchange bounces: "<addr>:" then a reply with a code, original headers below. */
function parsePlainBounce(mail: ParsedMail, origText: string | undefined): DsnReport | null {
  const text = mail.text ?? '';
  const from = mail.from?.value[0]?.address?.toLowerCase() ?? '';
  const looksLikeBounce = /mailer-daemon|postmaster/.test(from) || /undeliver|delivery (status notification|failure)|returned mail|failure notice|could not be delivered|unable to deliver/i.test(`${mail.subject ?? ''} ${text.slice(0, 2000)}`);
  if (!looksLikeBounce) return null;
  const code = /\b([45]\d\d)[ -:]+(?:([245]\.\d{1,3}\.\d{1,3})\b)?/.exec(text) ?? /#([45]\.\d{1,3}\.\d{1,3})/.exec(text);
  if (!code) return null;
  let basic: number | undefined;
  let status: string | undefined;
  if (code[0].startsWith('#')) status = code[1];
  else {
    basic = Number(code[1]);
    status = code[2];
  }
  const cls = status ? status[0] : String(basic)[0];
  const rcpt = /<([^<>\s@]+@[^<>\s]+)>:?/.exec(text)?.[1];
  const line = text.split('\n').find((l) => l.includes(code[0]))?.trim() ?? code[0];
  const r: DsnRecipient = { action: cls === '5' ? 'failed' : 'delayed', diagnosticCode: line.replace(/\s+/g, ' ') };
  if (status) r.status = status;
  if (rcpt) r.finalRecipient = rcpt.toLowerCase();
  const report: DsnReport = { standard: false, recipients: [r] };
  const mid = originalMessageId(origText ?? text);
  if (mid) report.originalMessageId = mid;
  return report;
}
