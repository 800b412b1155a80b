/**
 * What happened to one failed recipient of a bounce: its action, status, reply, classification
 * and whether it suppresses the address, from the report's fields for it and the text about it.
 */
import { type Classification, classifyReply, saysNoSuchMailbox } from '../domain/classify.js';
import { type SuppressionPolicy, suppressFor } from '../domain/outcome.js';
import type { Action, ReportRecipient } from '../domain/report.js';
import { coreOf, replyParts, smtpStage, tidy } from './bounce-text.js';
import type { DsnBlock } from './dsn-fields.js';

export interface RecipientFacts {
  address: string;
  originalRecipient: string | null;
  /** The report's fields for this recipient, if it has them. */
  block: DsnBlock | null;
  /** The notification's text about this recipient, if any. */
  text: string | undefined;
  /** The only recipient the bounce names. */
  single: boolean;
  /** The bounce is a delay warning. */
  delayed: boolean;
  subject: string;
}

/** The classifications that put the blame on the address: wording about the recipient that outweighs a status saying otherwise. */
const ADDRESS_VERDICTS = new Set<Classification>([
  'unknown_recipient',
  'dns_failure',
  'mailbox_disabled',
  'mailbox_full',
]);

export function verdict(f: RecipientFacts, policy: SuppressionPolicy): ReportRecipient {
  const b = f.block;
  const core = f.text !== undefined ? coreOf(f.text) : null;
  const diagnostic = b?.diagnosticCode ?? core?.text ?? null;
  const fromText = f.text !== undefined ? replyParts(f.text) : { replyCode: null, status: null };
  const fromDiag = diagnostic ? replyParts(diagnostic) : { replyCode: null, status: null };
  const replyCode = fromDiag.replyCode ?? fromText.replyCode;
  const action: Action = b?.action ?? (f.delayed ? 'delayed' : 'failed');
  const status = statusOf(b?.status ?? fromDiag.status ?? fromText.status ?? null, fromDiag.status, replyCode, action);
  // The text about this recipient, where the reply alone says too little (with several
  // recipients, only up to the reply it quotes: what follows is about the others).
  const about = core ? (f.single ? f.text! : core.context) : undefined;
  // A server's reply, or the reporting MTA's own words for this recipient: a Diagnostic-Code, or a reply the text quotes.
  const reply = !!b?.diagnosticCode || !!core?.reply;
  let classification = reply
    ? classifyReply({ code: replyCode ?? impliedCode(status), enhanced_code: status ?? '', message: diagnostic ?? '' })
    : statusVerdict(status, about);
  if (classification === 'other' && about && reply)
    classification = classifyReply({
      code: replyCode ?? impliedCode(status),
      enhanced_code: status ?? '',
      message: tidy(about),
    });
  classification = refined(classification, f.subject, status, `${diagnostic ?? ''} ${about ?? ''}`);
  // "Diagnostic-Code: x-unix; ...": a local delivery program's output (procmail, a script), which
  // says nothing certain about the address whatever its words.
  if (b?.diagnosticType === 'x-unix' && classification === 'unknown_recipient') classification = 'other';
  // What the reply answered: said in the diagnostic, or in the text about this recipient.
  const stage = smtpStage(diagnostic ?? '') ?? (about ? smtpStage(about) : null);
  // Refused at MAIL FROM, or on connecting: the sender or the connection, whatever the words say
  // (Exim: "SMTP error from remote mail server after MAIL FROM:<a@b>: 553 5.1.0 b does not exist").
  if ((stage === 'mail' || stage === 'connect') && ADDRESS_VERDICTS.has(classification))
    classification = stage === 'mail' ? 'policy' : 'connection_failure';
  const permanent = action === 'failed';
  // A 4.x.x status is temporary whatever the action says: never a reason to suppress.
  const suppress =
    permanent &&
    (status ?? '5')[0] === '5' &&
    suppressFor({ classification, status, stage, text: diagnostic ?? about ?? '' }, policy);
  return {
    address: f.address,
    originalRecipient: f.originalRecipient,
    action,
    status,
    replyCode,
    diagnostic: diagnostic ? tidy(diagnostic) : null,
    classification,
    permanent,
    suppress,
  };
}

/**
 * What the words around a classification change in it. Sendmail's "Returned mail: Cannot send
 * message for 5 days": the cause behind was temporary, the retries ran out. A policy status
 * (x.7.x) beside a sentence saying the mailbox does not exist ("Status: 5.7.1" and
 * "bob@example.net: no such mailbox"): the sentence about the mailbox is the more specific.
 */
function refined(c: Classification, subject: string, status: string | null, text: string): Classification {
  if (c === 'other' || c === 'timeout' || c === 'connection_failure')
    return classifyReply({ code: 0, enhanced_code: '', message: subject }) === 'expired' ? 'expired' : c;
  if (c === 'policy' && /^[45]\.7\./.test(status ?? '') && saysNoSuchMailbox(tidy(text))) return 'unknown_recipient';
  return c;
}

/**
 * The status to record. A generic one (x.0.0) says less than the reply it came with ("Status:
 * 5.0.0" with "550 5.1.1 User unknown"), and a report that failed the recipient with a generic
 * 4.0.0 and a 5.x.x reply failed it for the reply's reason. Without any, the reply code's class,
 * or the action's.
 */
function statusOf(
  stated: string | null,
  fromDiag: string | null,
  replyCode: number | null,
  action: Action,
): string | null {
  let status = stated;
  if (
    status &&
    /^[245]\.0\.0$/.test(status) &&
    fromDiag &&
    (fromDiag[0] === status[0] || (action === 'failed' && fromDiag[0] === '5'))
  )
    status = fromDiag;
  if (status) return status;
  if (replyCode) return `${String(replyCode)[0]}.0.0`;
  return action === 'failed' ? '5.0.0' : action === 'delayed' ? '4.0.0' : action === 'delivered' ? '2.0.0' : null;
}

/** The reply code a status implies, for the rules that look at the code, where the report gives none. */
function impliedCode(status: string | null): number {
  return status ? Number(status[0]) * 100 + 50 : 0;
}

/**
 * Where no reply was quoted: a status that is more than its class (RFC 3463's subject and
 * detail: x.1.1 no such mailbox, x.1.2 no such host, x.2.2 mailbox full, x.7.1 refused by policy)
 * is the verdict, and the notification's boilerplate (a virus scanner's footer, a postmaster's
 * explanation) does not outweigh it; only wording about the address ("User unknown", "Host not
 * found") or about retries that ran out ("retry timeout exceeded") does, as the reporting MTA's
 * own account of this recipient. A generic status (x.0.0) leaves the text to decide.
 */
function statusVerdict(status: string | null, about: string | undefined): Classification {
  const byStatus =
    status && !/^[245]\.0\.0$/.test(status)
      ? classifyReply({ code: impliedCode(status), enhanced_code: status, message: '' })
      : 'other';
  const byText = about
    ? classifyReply({ code: impliedCode(status), enhanced_code: '', message: tidy(about) })
    : 'other';
  if (byStatus === 'other') return byText;
  return ADDRESS_VERDICTS.has(byText) || byText === 'expired' ? byText : byStatus;
}
