/**
 * What makes a message a bounce, a delay warning, or neither: the wording and headers mail
 * systems give their reports, and those of the messages that look like reports and are not
 * (auto-replies, challenge-response systems asking the sender to prove they are a person).
 *
 * Learnt from sisimai's set-of-emails (the corpus test), and from the test data and rule tables
 * of GNU Mailman's and flufl.bounce's bouncers (SimpleMatch, SimpleWarning), Perl's
 * Mail::DeliveryStatus::BounceParser, PHP-Bounce-Handler and Ruby's bounce_email; each line
 * carries the real text it was written for.
 */
import { type Field, field } from '../mime/reader.js';

/**
 * Signs that a message is a delivery report, from its envelope and headers: the null sender or
 * a mailer-daemon, the subjects MTAs give their reports, and the report's own headers.
 */
export const BOUNCE_FROM =
  /mailer-daemon|post_?master|mail ?delivery|mail ?administrator|mail ?system|daemon|bounce|returned|notification|noreply|no-reply|automated|system administrator/i;
/**
 * Postfix: "Undelivered Mail Returned to Sender"; Sendmail: "Returned mail: see transcript for details"; qmail: "failure notice";
 * Exim: "Mail delivery failed: returning message to sender"; Exchange: "Undeliverable: ..."; Google: "Delivery Status Notification (Failure)";
 * Domino: "DELIVERY FAILURE: ..."; ezweb: "Mail System Error - Returned Mail"; x6: "There was an error sending your mail".
 * GroupWise: "Message status - undeliverable"; Exchange: "Mail Delivery Warning"; Exim: "Warning: message 14jRTi-0007jE-00 delayed 24 hours".
 * LLNL: "FAILED MAIL to \"trotts1\" regarding ..."; Sina: "邮件传输失败！" (mail transmission failed).
 */
export const BOUNCE_SUBJECT =
  /undeliver|mail failed|undelivered|returned (mail|to sender)|return(ed)? mail|failure notice|delivery (status|failure|failed|notification|report|problem|has failed|error|warning)|mail delivery failed|could not (be )?deliver|not delivered|non[- ]?delivery|delivery (to|of) .*(failed|delayed)|mail (system )?error|error sending|delayed mail|warning: could not send|cannot send message|message (not )?(delivered|delivery)|rejected|returned|bounce|nondeliverable|unable to deliver|failed delivery|mail failure|delivery notification|problem delivering|^warning: message .*delayed|message (delayed|deferred)|delivery delayed|not yet been delivered|failed (mail|message|delivery)|失败|退信/i;

/**
 * Phrases a bounce's text uses to say a message did not reach someone, by MTA.
 */
export const FAILURE_TEXT: RegExp[] = [
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
  // Exchange: "Delivery of email to this address ... has been postponed"; NTMail: "The following recipients did not receive your message"
  // hMailServer: "The following recipient(s) could not be reached"; phquery: "Message not delivered to the following addresses"
  /has been postponed|did not receive (your|this) message|could not be reached|message not delivered|receiver not found/i,
  // dadoservice: "Your message has encountered delivery problems"; Sina: "邮件无法发送到您指定的地址中" (the mail cannot be sent to the address you gave);
  // EYOU: "到下列地址的信件投递失败" (delivery to these addresses failed)
  /encountered delivery problems|无法发送|投递失败|发送失败|无法送达|無法傳遞/i,
];

/**
 * A delay warning, not a failure: the reporting MTA is still trying.
 * Gmail: "Delivery Status Notification (Delay)", "THIS IS A WARNING MESSAGE ONLY."; Exim: "No action is required on your part. Delivery attempts will continue";
 * Symantec: "Delivery attempts will continue to be made for 5 day(s)"; Exchange: "This is an advisory-only email ... has been postponed";
 * MessageSwitch: "This is just a warning, you do not need to take any action"; VOPmail: "Your message has been delayed and is still awaiting delivery".
 */
export const DELAY_TEXT =
  /warning message only|warning only|you do not need to resend|still (being retried|undelivered|trying|awaiting delivery)|will (continue|keep) trying|will (be )?retr(y|ied)|has been delayed|delivery (to the following recipients? )?(has been )?delayed|not yet been delivered|delayed mail|warning: (could not send|message still)|temporary failure,? (will|retrying)|retry (for|until)|\(delay\)|attempts will continue|continue to (attempt|try)|(has been|was) postponed|advisory[- ]only|just a warning|no action is required on your part|^warning: message .*delayed|message delayed/im;

/**
 * An auto-reply's subject: an out-of-office message is no bounce, whoever sends it (some send
 * them from the null sender). "Auto: ...", "Automatic reply: ...", "Out of Office: ...",
 * Polish "[Automatyczna odpowiedź]", French "Réponse automatique", German "Abwesenheitsnotiz".
 */
export const AUTO_REPLY_SUBJECT =
  /^\W*(auto:|auto(matic|mated)?[- ]?(reply|response|answer|antwort)|out of (the )?office|vacation|away from|abwesen|automatyczna odpowied|r.ponse automatique|respuesta autom.tica|risposta automatica|resposta autom.tica)/i;

/** Words of a report that has given up, whatever else it says: it is no delay warning. */
export const GIVEN_UP =
  /permanent(ly)? (fatal )?(error|failure)|fatal error|(have|has) given up|giving up|will not be (retried|delivered)|no further (delivery )?attempts/i;

/**
 * Challenge-response systems: the recipient's filter holds the message and asks the sender to
 * prove they are a person. The message did not fail; it waits for the sender.
 * Boxbe: "Your message about ... has been waitlisted. Please add yourself to my Boxbe Guest List",
 * with "Diagnostic-Code: X-Boxbe-Notice; Sender not pre-approved"; Bluebottle: "This account is protected by
 * Bluebottle. Please click on the following link to have your address added to the recipient's allowed list";
 * TMDA: "X-Delivery-Agent: TMDA/1.1.12"; SpamArrest: "verify that you are a real person".
 */
const CHALLENGE_TEXT =
  /sender not pre-?approved|guest list|waitlisted|(verify|confirm|prove) (that )?you are (a )?(real )?(person|human|not a (robot|spammer|machine))|(add|added|adding) (yourself|you|your (e-?mail )?address) to (my|the recipient'?s?|the|his|her|their) (guest |allowed |approved |safe |white ?|sender )(list|senders)|(this|my) (account|mailbox|e-?mail( address)?) is protected by|challenge[- ]response|(awaiting|pending|requires?) (your )?(verification|confirmation) (of|from) (the )?sender/i;
const CHALLENGE_HEADERS: Array<[string, RegExp]> = [
  ['x-delivery-agent', /^TMDA/i],
  ['x-bluebottle-request', /./],
  ['x-boxbe-notice', /./],
  ['x-spamarrest-noauth', /./],
];

/** A challenge-response system's request, by its headers, its report's diagnostic type, or its words with no server's reply in them. */
export function isChallenge(headers: Field[], text: string, diagnosticTypes: string[], anyReply: boolean): boolean {
  if (CHALLENGE_HEADERS.some(([name, re]) => re.test(field(headers, name) ?? ''))) return true;
  if (diagnosticTypes.some((t) => t === 'x-boxbe-notice')) return true;
  return !anyReply && CHALLENGE_TEXT.test(text);
}

/**
 * A refusal in one sentence, and nothing else: a filter's or a server's notice, sent as an
 * automatic message (Auto-Submitted) from the null sender or a mailer-daemon, that says the
 * message was refused and names no one ("Your message was rejected by the recipient's filter.",
 * "Message rejected: spam detected", "Your email was blocked by the recipient's spam filter.").
 * An auto-reply's subject or any second line makes it something else.
 */
const REFUSAL_SENTENCE =
  /^[^\n]{0,80}\b(message|mail|e-?mail)\b[^\n]{0,60}\b(rejected|refused|blocked|declined|denied|not accepted)\b[^\n]{0,120}$/i;

export function isOneLineRefusal(headers: Field[], nullSender: boolean, notification: string): boolean {
  const from = field(headers, 'from') ?? '';
  const daemon = nullSender || /^\s*<?\s*>?\s*$/.test(from) || /mailer-daemon|postmaster/i.test(from);
  const auto = !/^\s*no\b/i.test(field(headers, 'auto-submitted') ?? 'no');
  const lines = notification.split('\n').filter((l) => l.trim());
  const subject = field(headers, 'subject') ?? '';
  return (
    daemon && auto && lines.length === 1 && REFUSAL_SENTENCE.test(lines[0]!.trim()) && !AUTO_REPLY_SUBJECT.test(subject)
  );
}
