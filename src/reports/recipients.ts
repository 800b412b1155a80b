/**
 * Which addresses a bounce says failed. The failed recipient comes from a field or a sentence
 * that names one (a report's Final-Recipient, Exim's X-Failed-Recipients, "The following
 * address(es) failed:", "did not reach the following recipient(s):"), never from the sending
 * side: the original's From, Sender, Reply-To, Return-Path and mailing-list addresses, the
 * report's own From and To, the envelope sender a report names. Suppressing one of those would
 * silence the sender and leave the address that failed on the list.
 *
 * What the tables below hold was learnt from the bounces of many mail systems: sisimai's
 * set-of-emails (the corpus test), and the test data and rule tables of GNU Mailman's and
 * flufl.bounce's bouncers, Perl's Mail::DeliveryStatus::BounceParser, PHP-Bounce-Handler and
 * Ruby's bounce_email. Each line carries the real text it was written for.
 */

import { type Field, field } from '../mime/reader.js';
import { type Mention, mentionedAddresses } from './bounce-text.js';
import { type DsnBlock, routable } from './dsn-fields.js';

/** An address as header fields write it. */
const HEADER_ADDRESS = /[^\s<>"',;:()]+@[^\s<>"',;:()]+/g;

/** Fields of the report itself that name the sending side, or the address the report came to. */
const REPORT_FIELDS = [
  'from',
  'to',
  'cc',
  'reply-to',
  'return-path',
  'sender',
  'errors-to',
  'resent-from',
  'resent-sender',
];
/**
 * Fields of the original message that name its sender or the list it went through. Mailman:
 * "List-Post: <mailto:boost@lists.boost.org>", "X-BeenThere: boost@lists.boost.org".
 */
const ORIGINAL_FIELDS = [
  'from',
  'return-path',
  'sender',
  'reply-to',
  'errors-to',
  'x-env-sender',
  'x-sender',
  'resent-from',
  'resent-sender',
];
/** List-* fields (RFC 2369) and the ones Mailman and other list managers add, in the report or the original. */
const LIST_FIELDS = [
  'list-post',
  'list-help',
  'list-owner',
  'list-subscribe',
  'list-unsubscribe',
  'list-id',
  'x-beenthere',
  'x-mailing-list',
  'mailing-list',
  'x-loop',
];

/** The sending side of a report: every address that must not be read as a failed recipient. */
export function sendingSide(report: Field[], original: Field[], envelopeSender: string | undefined): Set<string> {
  const out = new Set<string>();
  const add = (fields: Field[], names: string[]) => {
    for (const f of fields)
      if (names.includes(f.name)) for (const m of f.value.matchAll(HEADER_ADDRESS)) out.add(bare(m[0]));
  };
  add(report, [...REPORT_FIELDS, ...LIST_FIELDS]);
  add(original, [...ORIGINAL_FIELDS, ...LIST_FIELDS]);
  if (envelopeSender) out.add(bare(envelopeSender));
  return out;
}

function bare(a: string): string {
  return a
    .toLowerCase()
    .replace(/^mailto:/, '')
    .replace(/\?.*$/, '')
    .replace(/\.$/, '');
}

/** Addresses of the original's To and Cc, for the bounces that name nobody; a list's own address is not a recipient. */
export function originalRecipients(original: Field[], sending: Set<string>): string[] {
  const out: string[] = [];
  for (const name of ['to', 'cc'])
    for (const m of (field(original, name) ?? '').matchAll(/[^\s<>"',;:()]+@[^\s<>"',;:()]+\.[^\s<>"',;:()]+/g))
      if (!sending.has(bare(m[0]))) out.push(m[0]);
  return out;
}

/**
 * Words before an address that make it the sender's, whatever the text says of it.
 */
const SENDER_BEFORE: RegExp[] = [
  // Exim: "A message sent by\n\n  <shop@example.com>\n\ncould not be delivered"; Mimecast: "an email shop@example.com addressed to"
  /\b(sent|submitted|originated) by\W*$|\ban e-?mail\W*$|\bsender( address)?\W*$|\boriginator\W*$|\benvelope[- ]from\W*$/i,
  // AOL: "not accepting mail from shop@example.com"; Sendmail: "The original message was received ... from shop@example.com"
  /\bfrom\W*$/i,
  // AOL AirMail: "Sorry shop@example.com. Your mail to the following recipients could not be delivered"
  /^\W*sorry\W*$/i,
];

/**
 * Words around an address that make it a contact or an example in a postmaster's explanation,
 * not a recipient.
 */
const HELP_BEFORE =
  // "Please contact Postmaster@example.edu if you have any questions."; Netscape: "Please reply to Postmaster@nsmail.example.com"
  // "For further assistance, please send mail to postmaster@example.net"; "e.g. name@example.com"; HotPOP: "System Contact: postmaster@HotPOP.com"
  // phquery: "try sending to the most explicit form of the name, e.g., if\n mike.fox@yale.edu fails, try michael.j.fox@yale.edu."
  // and "To reach a party that was formerly reachable by emailing NAME@yale.edu, try emailing to NAME@cs.yale.edu instead."
  /\b(contact|write to|reply to|send (an? )?(e-?mail|mail|message|note|report) to|e-?mail us( at)?|mail us( at)?|forward (it|this|the [a-z]+) to|report (it |this )?to|complaints? (to|at)|questions? (to|at)|inquiries (to|at)|reach (us|them)? ?at|available at|e\.g\.,?( if)?|for example|such as|example:|try( (sending|e-?mailing|mailing|writing))?( to)?|(by )?e-?mailing( to)?|finger)\W*$/i;
/** "... postmaster@example.net if you have any questions", "... help@example.net for assistance", "... mike.fox@yale.edu fails, try". */
const HELP_AFTER =
  /^\W*(if you (have|feel|need|believe|think|want|require)|for (further |more |additional )?(assistance|information|help|details)|with (any )?(questions|problems)|fails\b|instead\b)/i;
/** Mail systems' own mailboxes, named in their explanations ("please forward this to postmaster@..."). */
const ROLE = /^(postmaster|mailer-daemon|abuse|hostmaster|webmaster|root|noc|security)@/i;
/**
 * Words before an address that make it the one the failed recipient was reached through (an
 * alias, a forward), not a second failed recipient: its original recipient.
 */
const ORIGINAL_BEFORE =
  // Exim: "john.b@b.example\n    (ultimately generated from john@b.example.co.uk)"; Sendmail: "<a@b> (expanded from: <c@d>)"; Postfix: "(expanded from <c@d>)"
  /\((ultimately )?generated from\W*$|\(expanded from:?\W*$|\b(aliased|forwarded|redirected) from\W*$|\boriginal(ly)? (recipient|addressed to)\W*$/i;

/**
 * A heading or phrase that introduces failed recipients. Exim: "The following address(es)
 * failed:"; Gmail: "Delivery to the following recipient failed permanently:"; Exchange: "did not
 * reach the following recipient(s):"; Notes: "was not delivered to:"; Yahoo: "Unable to deliver
 * message to the following address(es)."
 */
const FAILED_LIST =
  /(following (e-?mail )?(address|recipient|user|destination)[^.]{0,40}[:.]|failed:|recipients?:|delivered to:?|deliver (your message |this message )?to|message to:?|addressed to( e-?mail address)?\W*:?|following:|could not be reached:?|undeliverable to:?)\W*$/i;

export interface Candidate {
  address: string;
  /** The address the text says the failed one was reached through ("expanded from"), if any. */
  originalRecipient: string | null;
  mention: Mention;
  /** The original recipient of a failed address the text does not show ("an undisclosed address"): it stands for it. */
  standsIn?: boolean;
}

/**
 * The failed recipients a notification names, in order: the sender's addresses, contacts and
 * examples left out, and an alias's original recipient attached to the failed address it led to.
 */
export function namedRecipients(mentions: Mention[]): Candidate[] {
  const out: Candidate[] = [];
  for (const m of mentions) {
    if (ORIGINAL_BEFORE.test(m.before)) {
      // Of the failed address named just above; where none is (Exim: "an undisclosed address\n
      // (generated from bob@example.net)"; "to local user bob.\n(Originally addressed to
      // bob@example.it)"), the original is the only address there is of the failed recipient.
      const last = out[out.length - 1];
      if (last && !last.originalRecipient && m.line - last.mention.line <= 2) last.originalRecipient = m.address;
      else if (!last || m.line - last.mention.line > 2)
        out.push({ address: m.address, originalRecipient: null, mention: m, standsIn: true });
      continue;
    }
    if (SENDER_BEFORE.some((re) => re.test(m.before))) continue;
    if (HELP_BEFORE.test(m.before) || HELP_AFTER.test(m.after)) continue;
    out.push({ address: m.address, originalRecipient: null, mention: m });
  }
  // A mail system's own mailbox is a contact, unless nobody else is named.
  const named = out.filter((c) => !ROLE.test(c.address));
  return failedOnes(named.length ? named : out);
}

/**
 * Words before an address that make it the one a message was for ("your message to", "Unknown
 * user:", "Failed Recipient:", "Error-for:", "RCPT TO:<").
 */
const RECIPIENT_BEFORE = /\b(to|for|recipients?|user|address(ee)?|mailbox|account|error-for|rcpt to)\W*$/i;
/** Words on an address's line that say something failed there ("did not exactly match", "552 Quota violation for", "... unknown host"). */
const FAILURE_WORDS =
  /\b(not|no|unknown|invalid|illegal|fail(ed|ure)?|error|reject(ed)?|refused|denied|unable|couldn.t|cannot|can.t|undeliver(able|ed)|bounced|full|quota|exceed(s|ed)?|disabled|inactive|suspended|expired|unavailable|doesn.t|blocked|delay(ed)?|[45]\d\d)\b/i;

/**
 * Of the addresses a notification names, those it names as failed: listed on their own line,
 * under a heading for failed recipients (Exchange IMS: "did not reach the following
 * recipient(s):\n\nc=US;a= ;p=Example;o=Mail;dda:SMTP=bob@example.net; on Fri, 4 Oct 2002"), after words
 * for a recipient, or on a line that says what failed. The others are the prose
 * around them (LLNL: "The standard form of email address at LLNL is lastnameNumber@llnl.gov";
 * "The following locator information may be of help in finding another means of contacting
 * \"user1\": ... user4@example.gov"). Where the text names none so, none: the local parts it
 * lists, or the original's recipients, are the better guess.
 */
function failedOnes(candidates: Candidate[]): Candidate[] {
  const failedLine = (c: Candidate) =>
    FAILURE_WORDS.test(`${c.mention.listed ? '' : c.mention.before} ${c.mention.after}`);
  const strong = (c: Candidate) =>
    c.standsIn ||
    c.mention.listed ||
    RECIPIENT_BEFORE.test(c.mention.before) ||
    FAILED_LIST.test(c.mention.before) ||
    FAILED_LIST.test(c.mention.previous);
  if (candidates.some(strong)) return candidates.filter((c) => strong(c) || failedLine(c));
  return candidates.filter(failedLine);
}

/**
 * GroupWise, CompuServe and AOL name the failed recipient by its local part alone ("The message
 * that you sent was undeliverable to the following:\n\trecipient (User account is expired)";
 * "Receiver not found: lallison"; "Your mail to the following recipients could not be delivered
 * because they are not accepting mail with attachments or embedded images:\n\tmykewlaolacct"), as
 * Sendmail does a local user ("----- The following addresses had permanent fatal errors -----\n
 * alice"): the address is completed as completeLocalPart says.
 */
const LOCAL_PART_ONLY: RegExp[] = [
  /^\s+([A-Za-z0-9._+-]+)(\s+\([^)]*\))?\s*$/,
  /^\s*receiver not found:\s*([A-Za-z0-9._+-]+)\s*$/i,
  // phquery: " userx    No matches to nameserver query"
  /^\s+([A-Za-z0-9._+-]+)\s{2,}[A-Za-z].*$/,
  // Sendmail, a local user under its heading, alone on its line or in its transcript: "alice", "<alice>", "alice... User unknown"
  /^<([A-Za-z0-9._+-]+)>\s*$|^([A-Za-z0-9._+-]+)\.\.\.\s+\S/,
];
const LOCAL_PART_HEADING =
  /undeliverable to the following|receiver not found|(could not be delivered|not delivered) to the following|following recipients could not be delivered|following addresses had permanent fatal errors/i;

export function localPartRecipients(notification: string, original: Field[], reportFrom: string): string[] {
  const lines = notification.split('\n');
  const start = lines.findIndex((l) => LOCAL_PART_HEADING.test(l));
  if (start < 0) return [];
  const out: string[] = [];
  for (const line of lines.slice(start)) {
    const local = LOCAL_PART_ONLY.map((re) => re.exec(line))
      .map((m) => m?.[1] ?? m?.[2])
      .find((l) => l);
    const address = local ? completeLocalPart(local, original, reportFrom) : null;
    if (address && !out.includes(address)) out.push(address);
  }
  return out;
}

/**
 * A failed recipient named by its local part alone, completed: the original's recipient (To, Cc)
 * with that local part; else that local part at the original recipient's domain (the first To or
 * Cc: the mailbox an alias or a forward led to lives where the mail was sent); only where the
 * original names nobody, at the reporting system's domain (the From of the report).
 */
export function completeLocalPart(local: string, original: Field[], reportFrom: string): string | null {
  const known = ['to', 'cc'].flatMap((n) => [...(field(original, n) ?? '').matchAll(HEADER_ADDRESS)].map((m) => m[0]));
  const same = known.find((a) => a.toLowerCase().startsWith(`${local.toLowerCase()}@`));
  if (same) return same;
  const domain =
    known.map((a) => a.slice(a.lastIndexOf('@') + 1)).find((d) => routable(`x@${d}`)) ??
    /@([^\s>]+)/.exec(reportFrom)?.[1];
  return domain ? `${local}@${domain.toLowerCase()}` : null;
}

export interface Chosen {
  address: string;
  originalRecipient: string | null;
  /** The report's fields for it. */
  block: DsnBlock | null;
}

export interface BounceParts {
  notification: string;
  blocks: DsnBlock[];
  /** Exim's X-Failed-Recipients. */
  failedHeader: string[];
  /** The report's header fields, and the original's. */
  headers: Field[];
  original: Field[];
  from: string;
  envelopeSender: string | undefined;
}

/**
 * The failed recipients of a bounce, and the mentions of them that split its text between them.
 * In order of trust: the report's fields; the addresses the text names as failed, and Exim's
 * X-Failed-Recipients; the local parts GroupWise names; and, for Sendmail 5, which names nobody,
 * the recipients of the copy it returns.
 */
export function chooseRecipients(p: BounceParts): { chosen: Chosen[]; mentions: Mention[] } {
  const sending = sendingSide(p.headers, p.original, p.envelopeSender);
  let candidates = namedRecipients(mentionedAddresses(p.notification, (a) => sending.has(a)));
  // Someone who wrote to themselves: the only address named is the one the bounce came back to.
  // It must be named as failed (under a heading, or alone on its line as the failed addresses
  // are listed), or be among the original's recipients: the sender named in a sentence is never
  // a failed recipient.
  if (!candidates.length) {
    const to = new Set(originalRecipients(p.original, new Set()).map(bare));
    const ownFrom = bare(/[^\s<>"',;:()]+@[^\s<>"',;:()]+/.exec(p.from)?.[0] ?? '');
    candidates = namedRecipients(mentionedAddresses(p.notification, (a) => a === ownFrom)).filter(
      (c) =>
        !sending.has(bare(c.address)) ||
        to.has(bare(c.address)) ||
        FAILED_LIST.test(c.mention.before) ||
        /^\W*$/.test(c.mention.after),
    );
  }
  const mentions = candidates.map((c) => c.mention);
  const named = (a: string) => candidates.find((c) => c.address.toLowerCase() === a.toLowerCase());
  if (p.blocks.length) {
    // The final recipient, unless it is not an address on the Internet and the original one is;
    // a local part alone ("Final-Recipient: rfc822; alice"), completed.
    const chosen = p.blocks.map((b) => {
      const named =
        !routable(b.finalRecipient) && routable(b.originalRecipient)
          ? b.originalRecipient!
          : (b.finalRecipient ?? b.originalRecipient!);
      const address = named.includes('@') ? named : (completeLocalPart(named, p.original, p.from) ?? named);
      const original = b.originalRecipient?.includes('@') ? b.originalRecipient : null;
      return { address, originalRecipient: original ?? null, block: b };
    });
    return { chosen, mentions };
  }
  // The addresses the text names as failed, and those of Exim's X-Failed-Recipients it does not;
  // an original recipient that stood in for an address the text does not show is that address's.
  const unnamed = p.failedHeader.filter((a) => !named(a));
  const standIns = candidates.filter((c) => c.standsIn).slice(0, unnamed.length);
  const chosen: Chosen[] = candidates
    .filter((c) => !standIns.includes(c))
    .map((c) => ({ address: c.address, originalRecipient: c.originalRecipient, block: null }));
  for (const [i, a] of unnamed.entries())
    chosen.push({ address: a, originalRecipient: standIns[i]?.address ?? null, block: null });
  if (chosen.length) return { chosen, mentions };
  const local = localPartRecipients(p.notification, p.original, p.from);
  const rest = local.length ? local : originalRecipients(p.original, sending);
  return { chosen: rest.map((a) => ({ address: a, originalRecipient: null, block: null })), mentions };
}
