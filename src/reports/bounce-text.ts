import type { SmtpStage } from '../domain/outcome.js';
import { undecorated } from './dsn-fields.js';

/**
 * What the human-readable text of a bounce says: which recipients failed, and the reply or
 * reason given for each. Every MTA words it differently; what they share is the shape: a
 * notification that names the failed addresses, each followed by its reason, then (often) a
 * copy of the original message. The tables below hold the wording that marks each part, each
 * line with the real text it was written for.
 */

/**
 * Lines where a copy of the original message (or its headers) begins: the notification ends
 * there, and no recipient is read below it.
 */
const ORIGINAL_STARTS: RegExp[] = [
  // Gmail: "----- Original message -----"; Exim: "------ This is a copy of the message, including all the headers. ------"
  // Sendmail: "   ----- Original message follows -----" / "----- Unsent message follows -----" / "----- Message header follows -----"
  // Notes: "------- Returned Message --------"; Exim (1&1): "--- The header of the original message is following. ---"
  /^\s*-{2,}\s*(original message|this is a copy of|a copy of|copy of the message|returned message|unsent message|undelivered message|message (text|headers?|body) follows?|the header of the original|header of the original|original headers?|original mail)\b/i,
  // qmail, Yahoo: "--- Below this line is a copy of the message."; x2: "--- Original message follows."
  /^\s*-*\s*below this line is a copy/i,
  // DragonFly: "Message headers follow."; OpenSMTPD: "Below is a copy of the original message:"; IMail: "Original message follows."
  /^\s*(message headers follow|below is a copy of the original|original message follows|the original message (headers )?(is|are|follows?)\s*:?\s*$|your original message follows|undelivered message follows|original message headers?:?\s*$)/i,
  // m-FILTER: "-------original message"
  /^\s*-{3,}\s*original message\s*$/i,
];

/** A header line that begins an included copy of the original message without a marker. */
const EMBEDDED_HEADER =
  /^(Return-Path|Received|Message-Id|Delivered-To|DKIM-Signature|X-Received|ARC-Seal|Authentication-Results|MIME-Version):\s/i;

/**
 * A MIME preamble, left in the text where a notice's structure was not read (its Content-Type
 * lost): the words a mail program writes for readers without MIME, never a diagnostic.
 * "This is a multi-part message in MIME format."; Sendmail: "This is a MIME-encapsulated message";
 * Postfix: "This is a MIME-encapsulated message."; "This is a MIME formatted message."
 */
const MIME_PREAMBLE =
  /^\s*(this is a (multi-?part )?(message in mime format|mime[- ](encapsulated|formatted) message)|this message is in mime format)\b.{0,40}$/i;

/** The notification part of a bounce's text: up to the copy of the original message; a MIME preamble left out. */
export function notificationOf(text: string): { notification: string; original: string | null } {
  const lines = text.split(/\r?\n/).map((l) => (MIME_PREAMBLE.test(l) ? '' : l));
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (ORIGINAL_STARTS.some((re) => re.test(line)))
      return { notification: lines.slice(0, i).join('\n'), original: lines.slice(i + 1).join('\n') };
    // An included header block: a header line followed by another header line (or a folded line).
    if (
      EMBEDDED_HEADER.test(line) &&
      i + 1 < lines.length &&
      /^([\x21-\x39\x3b-\x7e]+:\s|[ \t]+\S)/.test(lines[i + 1]!)
    )
      return { notification: lines.slice(0, i).join('\n'), original: lines.slice(i).join('\n') };
  }
  return { notification: lines.join('\n'), original: null };
}

/** An email address as bounces write them (bare, in angle brackets, after "mailto:"). */
const ADDRESS =
  /[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]/g;

/** Lines whose addresses are not failed recipients: the header fields of a message summary, links, message ids. */
const NOT_RECIPIENT_LINE =
  /^\s*(from|sender|reply-to|return-path|message-id|in-reply-to|references|date|subject|sent|x-[a-z-]+|received|dkim-signature|errors-to|cc|bcc|delivered-to|envelope-from|mail from)\s*:/i;
/** Lines of a summary of the original message ("To: bob@example.net" in "Your message ... To: ... Subject: ..."). */
const SUMMARY_TO_LINE = /^\s*to\s*:/i;

export interface Mention {
  address: string;
  /** Index of the line it was first seen on. */
  line: number;
  /** The words before it on its line, or, when nothing but punctuation precedes it there, the line before (Exim: "A message sent by\n\n  <shop@example.com>"). */
  before: string;
  /** The rest of its line. */
  after: string;
  /** Nothing but punctuation precedes it on its line: listed, as failed addresses are ("  <bob@example.net>:", "   * bob@example.net"). */
  listed: boolean;
  /** The line before its own (the first one that is not blank). */
  previous: string;
}

/**
 * Addresses the notification names, in order, each once, but for those `exclude` says are not
 * recipients (the sender, the reporting system) and those in links or message ids.
 */
export function mentionedAddresses(notification: string, exclude: (address: string) => boolean): Mention[] {
  const out: Mention[] = [];
  const seen = new Set<string>();
  const lines = notification.split('\n');
  const summary: Mention[] = [];
  lines.forEach((line, n) => {
    if (NOT_RECIPIENT_LINE.test(line)) return;
    const inSummary = SUMMARY_TO_LINE.test(line);
    for (const m of line.matchAll(ADDRESS)) {
      const address = undecorated(m[0].replace(/\.+$/, ''));
      const before = line.slice(0, m.index);
      // In a URL ("https://support.example/?u=bob@example.net") or a message id ("<123@mx.example>" after Message-ID).
      if (/(https?:\/\/|www\.)\S*$/i.test(before) || /message-?id\W*$/i.test(before)) continue;
      const key = address.toLowerCase();
      if (seen.has(key) || exclude(key)) continue;
      seen.add(key);
      const listed = !/[A-Za-z0-9]/.test(before);
      const previous = previousLine(lines, n);
      const context = listed ? `${previous} ${before}` : before;
      (inSummary ? summary : out).push({
        address,
        line: n,
        before: context,
        after: line.slice(m.index + m[0].length),
        listed,
        previous,
      });
    }
  });
  // The "To:" of a summary of the message (Verizon: "Original Message: From: ... To: ...") names
  // the recipients when nothing else does; where the text names them, it may not (Exchange 2003
  // summarises the message it returns with its own "To:").
  return out.length ? out : summary;
}

function previousLine(lines: string[], n: number): string {
  for (let i = n - 1; i >= 0 && i >= n - 3; i--) if (lines[i]!.trim()) return lines[i]!.trim();
  return '';
}

/** A reply as servers write it: "550 5.1.1 text", "550-5.1.1 text", "550 text", "#550 5.2.2", "ERROR_CODE :550". */
const REPLY = /(?:^|[\s:;'"(#[]|said:?\s*)([45]\d\d)(?:[\s-]+|:\s*|$)(?:#?([245]\.\d{1,3}\.\d{1,3})\b)?/;
/**
 * Lines whose numbers are no reply: the original's headers quoted in a summary ("Subject: Release
 * 5.2.1 notes") and a server's greeting ("220 mx.example.net ESMTP Postfix 2.11.3").
 */
const NOT_A_REPLY_LINE =
  /^\s*(subject|date|sent|from|to|cc|x-[a-z-]+|received|user-agent|message-id|in-reply-to|references|thread-topic)\s*:|^\s*(<<<\s*)?220[\s-]/i;
/** A status standing alone: "(#5.1.1)", "#5.1.1", "5.1.1 User unknown", "Status: 5.1.1", "code 5.1.1". */
const ENHANCED = /(?:^|[^\d.])([245]\.\d{1,3}\.\d{1,3})(?![\d.]*\d)(?!\/)/g;
/**
 * The words that may stand before a status with nothing but a space between. Any other word
 * there makes the number a version ("Postfix 2.11.3", "MDaemon 9.5.2", "version 4.0.1",
 * "v5.0.1"); punctuation does not ("RCPT TO not accepted: 5.7.1 This system is not configured to relay").
 */
const STATUS_WORDS = /^(status|code|error|dsn|reason|result|failure|diagnostic|said|smtp|returned|reply|response)$/i;

export interface ReplyParts {
  replyCode: number | null;
  status: string | null;
}

/** The reply code and enhanced status code a diagnostic states, if any. */
export function replyParts(text: string): ReplyParts {
  let replyCode: number | null = null;
  let status: string | null = null;
  const lines = text.split('\n').filter((l) => !NOT_A_REPLY_LINE.test(l));
  // The last reply in the text is the final word (transcripts list earlier commands first).
  for (const line of lines) {
    const m = REPLY.exec(line);
    if (m) {
      replyCode = Number(m[1]);
      if (m[2]) status = m[2];
    }
  }
  // qmail "(#5.1.1)", Exchange "#5.1.1", or a code standing alone.
  if (!status) status = standaloneStatus(lines);
  return { replyCode, status };
}

function standaloneStatus(lines: string[]): string | null {
  for (const line of lines)
    for (const m of line.matchAll(ENHANCED)) {
      const word = /(?:^|[^A-Za-z])([A-Za-z]+)(\s+|(?<=\bv))$/.exec(
        line.slice(0, m.index + m[0].length - m[1]!.length),
      )?.[1];
      if (!word || STATUS_WORDS.test(word)) return m[1]!;
    }
  return null;
}

/** Whitespace collapsed, at most 1,000 characters: a diagnostic as events and the API show it. */
export function tidy(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > 1000 ? t.slice(0, 997) + '...' : t;
}

/**
 * The text that concerns each recipient: from where it is first named to where the next one is
 * (or the end of the notification). With a single recipient, the whole notification.
 */
export function diagnosticsOf(notification: string, mentions: Mention[]): Map<string, string> {
  const lines = notification.split('\n');
  const out = new Map<string, string>();
  if (mentions.length === 1) {
    out.set(mentions[0]!.address.toLowerCase(), notification);
    return out;
  }
  mentions.forEach((m, i) => {
    const end = mentions.slice(i + 1).find((n) => n.line > m.line)?.line ?? lines.length;
    out.set(m.address.toLowerCase(), lines.slice(m.line, Math.max(end, m.line + 1)).join('\n'));
  });
  return out;
}

/**
 * The heart of a diagnostic: the server's reply when the text quotes one (the first from where
 * the recipient is named: later ones in a transcript answer later commands, such as Sendmail's
 * "503 5.0.0 Need RCPT"), with what follows it on its line and its continuation lines; else the
 * text less the notification's boilerplate.
 */
export function coreDiagnostic(block: string): string {
  return coreOf(block).text;
}

/** coreDiagnostic, and the text of the block up to the end of the reply it found (what the reply answered is said there). */
export function coreOf(block: string): { text: string; context: string; reply: boolean } {
  const lines = block.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const m = NOT_A_REPLY_LINE.test(line) ? null : REPLY.exec(line);
    if (!m) continue;
    // The rest of a multi-line reply ("550-5.7.26 ..." up to "550 5.7.26 ..."), then continuation lines.
    let end = i + 1;
    while (
      end < lines.length &&
      /(^|\s)\d{3}-/.test(lines[end - 1]!) &&
      new RegExp(`(^|\\s)${m[1]}[- ]`).test(lines[end]!)
    )
      end++;
    while (end < lines.length && /^\s+\S/.test(lines[end]!) && !REPLY.test(lines[end]!) && end - i < 4) end++;
    return {
      text: tidy([line.slice(Math.max(0, line.indexOf(m[1]!))), ...lines.slice(i + 1, end)].join(' ')),
      context: lines.slice(0, end).join('\n'),
      reply: true,
    };
  }
  return { text: tidy(block), context: block, reply: false };
}

/**
 * The SMTP command a reply answered, where the bounce says: an address refused at RCPT TO is a
 * verdict on the address; the same words after DATA are often a content filter's.
 */
const STAGES: Array<[SmtpStage, RegExp]> = [
  // Postfix: "(in reply to RCPT TO command)", "(in reply to end of DATA command)"; Exim: "after RCPT TO:<a@b>", "after end of data"
  // qmail: "does not like recipient." / "failed after I sent the message."; DragonFly: "did not like our RCPT TO:" / "our final DATA:"
  // Sendmail transcript: ">>> RCPT To:<a@b>" then "<<< 550 ..."; Messaging Server: "Remote SMTP server has rejected address"
  [
    'data',
    /in reply to (end of )?DATA|after (end of )?data\b|after (sending|the) (message|data)|failed after I sent the message|our final DATA|>>> DATA\s*$|SMTP:DATA|DATA command|TEXT command/im,
  ],
  [
    'rcpt',
    /in reply to RCPT( TO)?|after (pipelined )?RCPT( TO)?|does not like recipient|our RCPT TO|>>> RCPT|RCPT TO response|SMTP:RCPT|has rejected address|RCPT TO command/im,
  ],
  ['mail', /in reply to MAIL( FROM)?|after MAIL FROM|our MAIL FROM|>>> MAIL|does not like sender|MAIL FROM command/im],
  [
    'connect',
    /(while|during) (connecting|greeting)|greeting wait|connection (refused|timed out|reset)|in reply to (our )?(EHLO|HELO)|banner/im,
  ],
];

/** The last SMTP stage a block of bounce text names (transcripts name earlier commands first). */
export function smtpStage(text: string): SmtpStage | null {
  // Sendmail transcripts: the last command sent before the failing reply.
  const sent = [...text.matchAll(/^>>> (RCPT|DATA|MAIL|EHLO|HELO)/gim)].map((m) => m[1]!.toUpperCase());
  if (sent.length)
    return ({ RCPT: 'rcpt', DATA: 'data', MAIL: 'mail', EHLO: 'connect', HELO: 'connect' } as const)[
      sent[sent.length - 1] as 'RCPT'
    ];
  for (const [stage, re] of STAGES) if (re.test(text)) return stage;
  return null;
}
