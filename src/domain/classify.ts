/**
 * Classification of a remote server's reply, or of a bounce's diagnostic: a pure function of
 * the reply code, the enhanced status code and the text. Whether to retry is decided elsewhere,
 * by the reply code's first digit; the label says why, and decides whether a permanent failure
 * suppresses the address (domain/outcome.ts). Rules are tried in order and the first match wins:
 * causes on the sender's side first (a reply that blames the sender often also names the
 * recipient), then the recipient's mailbox, then enhanced codes, then the code alone. Each rule
 * carries the real reply it was written for. The wordings were learnt from the replies and
 * bounces of real mail systems: sisimai's set-of-emails, and the test data and rule tables of
 * GNU Mailman's and flufl.bounce's bouncers, Perl's Mail::DeliveryStatus::BounceParser,
 * PHP-Bounce-Handler and Ruby's bounce_email.
 */

import type { Reply } from './outcome.js';
export const CLASSIFICATIONS = [
  'unknown_recipient',
  'mailbox_disabled',
  'mailbox_full',
  'message_too_large',
  'spam_block',
  'policy',
  'rate_limited',
  'greylisted',
  'dns_failure',
  'connection_failure',
  'tls_failure',
  /** Only ever ours: the relay host (outbound.relay) refused posthaste's credentials. */
  'auth_failure',
  'timeout',
  'expired',
  'other',
] as const;
export type Classification = (typeof CLASSIFICATIONS)[number];

/** A reply as read off the wire: the Reply of domain/outcome.ts before it is classified. */
export type ReplyText = Omit<Reply, 'classification'>;

interface Rule {
  label: Classification;
  code?: RegExp;
  enhanced?: RegExp;
  text?: RegExp;
}

/**
 * The plain sentences that say a recipient's mailbox does not exist ("User unknown", "No such
 * mailbox", "Recipient not found"): narrower than the unknown_recipient rules below, which also
 * hold wordings that boilerplate can carry ("check that the address is correct").
 */
const MAILBOX_UNKNOWN =
  /\buser(name)? (is )?unknown|\bunknown (user|recipient|mailbox|local[- ]part)\b|\bno such (user|mailbox|recipient|account|local user)\b|\b(user|recipient|mailbox|addressee) (does not exist|doesn'?t exist|not found|unknown)\b|\brecipient ?not ?found\b/i;
/** Words that put a refusal on the sender's side, whatever else it names (the second rule below). */
const SENDER_SIDE =
  /sender (address|domain|verify|verification)|domain of sender|(unknown|invalid|bad|unverified) sender|after MAIL FROM|MAIL FROM:?\s*<[^>]*>\.\.\.|sender .*(rejected|refused|denied|not (allowed|permitted))/i;
const RELAY_DENIED =
  /relay(ing)? (access )?(denied|not (permitted|allowed))|not permitted to relay|unable to relay|we do not relay|relay access|no relaying/i;

const rules: Rule[] = [
  // ---- Rate and volume.
  // Gmail: "421-4.7.28 Our system has detected an unusual rate of unsolicited mail ... rate limited"
  { label: 'rate_limited', enhanced: /^4\.7\.28$/ },
  // Hotmail/Outlook: "421 RP-001 (BAY004-MC1F2) Unfortunately, some messages ... rate limit"
  { label: 'rate_limited', text: /\bRP-00\d\b/ },
  // Yahoo: "421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume"
  { label: 'rate_limited', text: /\[TS[S0-9]\d+\]/ },
  // Exchange Online's throttling range: "451 4.7.500 Server busy. Please try again later from [192.0.2.1]. (S77719)"
  { label: 'rate_limited', enhanced: /^4\.7\.[56]\d\d$/ },
  // "450 4.2.1 The user you are trying to contact is receiving mail too quickly" (Gmail)
  // "421 Too many concurrent SMTP connections from this IP address; please try again later."
  {
    label: 'rate_limited',
    text: /too quickly|at a rate that|rate limit|too many (concurrent |simultaneous )?(connections|messages|recipients|sessions)|throttl|slow down|unexpected volume|exceeded .*(sending|message) (limit|rate)/i,
  },
  // Postgrey: "450 4.2.0 <a@b>: Recipient address rejected: Greylisted, see http://postgrey..."
  { label: 'greylisted', code: /^4/, text: /grey-?list|gray-?list/i },

  // ---- The sender, not the recipient.
  // Postfix: "553 5.1.8 <shop@example.com>: Sender address rejected: Domain not found"
  // Sendmail: "501 5.1.8 <x@y>... Domain of sender address x@y does not exist"
  // Exim: "SMTP error from remote mail server after MAIL FROM:<shop@example.com> SIZE=1543: 550 5.7.0 ... Please use the smtp server of your ISP."
  { label: 'policy', enhanced: /^[45]\.1\.[78]$/ },
  { label: 'policy', text: SENDER_SIDE },
  // "550 5.7.1 <bob@example.net>... Relaying denied" / Exim "550 relay not permitted"
  { label: 'policy', text: RELAY_DENIED },
  // Postfix: "450 4.7.1 Client host rejected: cannot find your reverse hostname, [192.0.2.1]"
  // "550 5.7.25 [192.0.2.1] The IP address sending this message does not have a PTR record setup"
  {
    label: 'policy',
    text: /reverse (dns|lookup|hostname|host name)|\bPTR\b|cannot find your hostname|no (reverse|rdns)|\brdns\b|client host rejected/i,
  },
  // Postfix RBL: "554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org"
  // A list named by its zone: "550 zen.example.test Listed by CSS" (Spamhaus's CSS, SBL, XBL, PBL)
  {
    label: 'spam_block',
    text: /blocked using|listed by (css|sbl|xbl|pbl|dbl|zen|\S*(bl|rbl|dnsbl))\b|spamhaus|barracuda|spamcop|sorbs|block ?list|black ?list|(black|block)listed|listed (at|in|on) \S*(bl\b|rbl|dnsbl|spamhaus|spamcop|sorbs|barracuda)|poor reputation|\breputation\b|\bRBL\b|\bDNSBL\b/i,
  },
  // Gmail: "550-5.7.1 Our system has detected that this message is likely unsolicited mail"
  {
    label: 'spam_block',
    text: /unsolicited|\bspam\b|junk mail|content rejected|message (was )?(blocked|rejected) (as|for) (spam|policy)|bulk mail|phish/i,
  },
  // Microsoft: "550 5.7.606 Access denied, banned sending IP [192.0.2.1]" and S3150 blocks
  { label: 'spam_block', enhanced: /^5\.7\.(606|511)$/ },
  {
    label: 'spam_block',
    text: /\bS3150\b|banned sending ip|IP address .*(blocked|rejected)|your (IP|host|network) .*(blocked|banned|rejected)/i,
  },
  // Gmail/Yahoo/Microsoft sender-authentication rules: "550 5.7.26 Unauthenticated email from example.com is not accepted"
  // and "550 5.7.515 Access denied, sending domain ... does not meet the required authentication level".
  // (5.7.27 is left to its text: RFC 7505 gives it to a sender's null MX, but Sendmail writes it
  // with "550 Host does not accept mail" for a recipient domain's.)
  { label: 'policy', enhanced: /^[45]\.7\.(2[0-6]|29|30|32|40|515)$/ },
  // "550 5.7.1 Unauthenticated email ... DMARC policy" / "5.7.1 ... SPF"
  {
    label: 'policy',
    text: /\bDMARC\b|\bSPF\b|\bDKIM\b|authentication (failed|required|level)|not authenticated|unauthenticated/i,
  },
  // "530 5.7.0 Must issue a STARTTLS command first" / "421 4.7.0 TLS required"
  { label: 'tls_failure', text: /STARTTLS|TLS required|encryption required|secure connection required/i },
  { label: 'tls_failure', enhanced: /^[45]\.7\.1[01]$/ },
  // "550 5.7.1 Message rejected: virus found (Eicar-Test-Signature)" / "552 ... attachment not allowed"
  {
    label: 'policy',
    text: /virus|malware|infected|(attachment|file type|extension)s? .*(not (allowed|permitted)|blocked|prohibited|rejected|banned)|banned (attachment|content)|content (policy|filter)/i,
  },
  // AOL: "Your mail to the following recipients could not be delivered because they are not accepting mail with attachments or embedded images"
  // (the recipient's own setting, and the content: not a domain that takes no mail)
  { label: 'policy', text: /not accepting (e-?mail|mail|messages) (with|from|containing)/i },
  // "554 5.4.6 Mail loop detected" / Exim "Too many \"Received\" headers - suspected mail loop"
  {
    label: 'other',
    text: /mail(ing)? loop|loop(s)? (back|detected)|too many hops|hop count|routing loop|suspected (mail )?loop/i,
  },
  // Office 365 Directory-Based Edge Blocking: "550 5.4.1 Recipient address rejected: Access denied. AS(201806281)"; Postfix check_recipient_access
  // Facebook: "550 5.1.1 RCP-P2 ... Refused due to recipient preferences"; the recipient's own block list or settings
  {
    label: 'policy',
    text: /recipient(.s)? (preferences|settings|policy)|due to (the )?recipients? policy|refused by (the )?recipient|blocked by the recipient|only accepting mail from/i,
  },
  // (the recipient's address, refused by the directory or the access table: an address verdict)
  // KDDI (au one net): "550 <a@b>: Recipient address rejected." (no reason: the address itself)
  { label: 'unknown_recipient', text: /recipient address rejected: access denied|recipient address rejected\.(\s|$)/i },
  // A sentence saying the mailbox does not exist, beside a policy's words or under a policy status
  // (x.7.x): the sentence about the mailbox is the more specific, and decides. Yandex: "550 5.7.1
  // No such user!"; Gmail (2006): "550 5.7.1 No such user c18si2365148hub"; "550 5.7.1 User unknown
  // or access denied"; "554 5.7.1 <bob@example.net>: Administrative prohibition: user unknown".
  // (The sender's and the relay's causes above still come first: "Sender verify failed ... no such user".)
  { label: 'unknown_recipient', text: MAILBOX_UNKNOWN },
  // "550 5.7.1 <bob@example.net>... Access denied" (the MTA's access table refusing this sender or host);
  // a filter's one-line refusal: "Your message was rejected by the recipient's filter."
  {
    label: 'policy',
    text: /access denied|not authorized|not allowed to send|administrative prohibition|policy (violation|reasons)|refused by (local )?policy|(rejected|refused|blocked) by (the )?(recipient'?s? |domain |content |mail |spam )*filter/i,
  },

  // ---- The message.
  // "552 5.3.4 Message size exceeds fixed maximum message size" / "552 5.2.3 ... too big"
  { label: 'message_too_large', enhanced: /^[45]\.(2\.3|3\.4)$/ },
  {
    label: 'message_too_large',
    text: /message (is )?too (big|large)|(message|mail) size (limit|exceed)|exceeds? .*(size|maximum message)|size exceeds|too large for|message length exceeds/i,
  },

  // ---- The recipient's mailbox.
  // Gmail: "550 5.2.1 The email account that you tried to reach is disabled." / "... is inactive"
  // Postfix: "525 5.7.13 <a@b>: Recipient address rejected: User account disabled"; i.ua: "550 Mailbox is frozen."
  // GroupWise: "recipient (User account is expired)"
  {
    label: 'mailbox_disabled',
    text: /account (that you tried to reach )?(is |has been )?(disabled|suspended|locked|frozen|inactive|deactivated|blocked|on hold)|account is expired|mailbox (is )?(currently )?suspended|mailbox (is |has been )?(disabled|frozen|inactive|suspended|locked)|disabled (recipient|mailbox|user)|(user|recipient) account (is )?(disabled|blocked|suspended)|temporar(il)?y locked|account is locked|inactive (user|mailbox|account)/i,
  },
  { label: 'mailbox_disabled', enhanced: /^[45]\.7\.13$/ },
  // Gmail: "452-4.2.2 The email account that you tried to reach is over quota" / qmail "552 Error: disk quota exceeded"
  // Exchange: "550 5.2.2 STOREDRV.Deliver: mailbox full"; Google: "The recipient's inbox is out of storage space"
  // "552 Quota violation for a@b"; "User has exhausted allowed storage space"; "User has too many messages on the server"
  // MDaemon: "552 Message for <a@b> would exceed mailbox quota"
  {
    label: 'mailbox_full',
    text: /over ?quota|quota (exceeded|exceed|full|violation)|exceed(s|ed)? (the |his |her |its |their )?(mailbox |storage |disk )?quota|exhausted (the |its |allowed )*storage|exceeded (its |the )?storage allocation|too many messages (on the server|in (the|this|his|her) mail ?box)|mailbox (is )?full|mail ?box full|mailfolder is full|inbox is (full|out of storage)|insufficient storage|out of storage|storage (quota|space)|disk (quota|space)|(mailbox|mail ?box) (size )?(exceeds|exceeded)|exceeds? (allowed|the) (size|quota)|mailbox .*exceeded|user.s (mailbox|mailfolder) is full|not enough (disk )?space|their mailbox is full/i,
  },
  { label: 'mailbox_full', enhanced: /^[45]\.2\.2$/ },

  // ---- Retries that ran out (the cause behind them was temporary).
  // Exim: "retry timeout exceeded"; Sendmail: "Cannot send message for 5 days"; "4.4.7 Delivery time expired"
  { label: 'expired', enhanced: /^[45]\.4\.7$/ },
  {
    label: 'expired',
    text: /retry time(out)? (not reached|exceeded)|delivery time expired|message expired|expired after|cannot send message for \d|could not be delivered (for|within) \d|has not been delivered for|been in the queue too long|queue time (limit|exceeded)|no (longer )?(retry|retries)|maximum (delivery )?(time|retry)|deferred for too long|delivery attempts (exhausted|exceeded)|time ?out .*give up/i,
  },

  // ---- The address does not exist.
  // Postfix: "550 5.1.1 <bob@example.net>: Recipient address rejected: User unknown in virtual mailbox table"
  // Exchange: "550 5.1.10 RESOLVER.ADR.RecipientNotFound"; Office 365: "The email address wasn't found at the destination domain"
  // Yahoo: "554 delivery error: dd This user doesn't have a yahoo.com account (bob@yahoo.com)"
  // qmail: "550 sorry, no mailbox here by that name (#5.1.1 - chkusr)"; Domino: "User x (a@b) not listed in Domino Directory"
  {
    label: 'unknown_recipient',
    text: /user(name)? (is )?unknown|unknown (user|recipient|local[- ]part|mailbox|address(ee)?)|no such (user|mailbox|recipient|account|local user|address|person)|(user|recipient|mailbox|address|account|addressee) (does not exist|doesn'?t exist|not found|unknown|not known|not recognized|is not valid|invalid|does not have an account)|does ?n[o']t exist|invalid (recipient|mailbox|user|address)|not (a )?valid (recipient|mailbox|user)|no mailbox (here|by that name)|mailbox (not found|unavailable|does not exist)|doesn'?t have an? \S+ account|not listed in (the )?(domino )?directory|recipient ?not ?found|recip(ient)?notfound|wasn.t found at|couldn.t be found|could not be found|address couldn.t be found|name is not recognized|no longer (valid|available|exists|active)|(mailbox|address|user|recipient) has been (deleted|removed|closed)|account (has been )?(closed|deleted|removed|terminated|expired)|#5\.1\.1|user not found|unknown or illegal (user|alias)|addressee unknown|not our customer|no such local user|bad destination mailbox|mailbox name not allowed|(user|recipient|address) (does )?not exist|invalid (final )?delivery userid|no valid recipients?|not listed in (the )?public name|ディレクトリ(のリスト)?に(は)?(見つかりません|ありません)/i,
  },
  // The same, in the wordings other bouncers' test data and rule tables hold, said without a
  // reply code as often as with one (Mailman's and flufl.bounce's bouncers, Perl's
  // Mail::DeliveryStatus::BounceParser, PHP-Bounce-Handler):
  // CompuServe: "Receiver not found: lallison"; phquery: "Does not have a final email delivery point";
  // mailfoundry: "server doesn't handle mail for that user"; "No such mail drop defined"; "No one with that email address here";
  // "This email address is not known to this system"; "<a@b> was not found in LDAP server"; "Unable to find alias user";
  // "Email Address was not found"; "No mail box available for this user"; "Invalid or unknown virtual user";
  // "recipient no longer on server"; "Old address no longer valid"; "The recipient name is not recognized" (Exchange IMS);
  // Italian "Destinatario sconosciuto", "Indirizzo inesistente"; Polish "Nie ma takiego konta", "nie istnieje";
  // German "Benutzer unbekannt", "Empfaenger unbekannt"; French "Destinataire inconnu", "Adresse inconnue",
  // "L'adresse de messagerie référencée ci-dessus n'existe pas"; Spanish "Usuario desconocido".
  {
    label: 'unknown_recipient',
    text: /receiver not found|does not have a (final )?(e-?mail )?delivery point|doesn'?t handle mail for (that|this) user|no such mail ?drop|no one with that (e-?mail )?address|not known (to this system|here|at this site)|was not found in (the )?ldap|unable to find alias|(e-?mail )?address was not found|no mail ?box available|unknown virtual user|no longer on (this )?server|address no longer valid|recipient (name )?not recognized|not a known user|destinatario (errato|sconosciuto|inesistente)|indirizzo inesistente|utente (sconosciuto|inesistente)|nie ma takiego (konta|u.ytkownika)|nie istnieje|benutzer (ist )?unbekannt|empf(ae|ä|a)nger (ist )?unbekannt|unbekannte?r? (benutzer|empf(ae|ä|a)nger)|destinataire inconnu|adresse (e-?mail )?(inconnue|invalide)|utilisateur inconnu|(adresse|utilisateur|destinataire|compte)[^.]{0,60}n.existe pas|utilisateur non recens|usuario (desconocido|inexistente)|direcci.n (de correo )?(inexistente|desconocida)/i,
  },
  // "550 5.1.6 Recipient addresses in this domain no longer accepted" / "551 User has moved"
  { label: 'unknown_recipient', text: /(has|have) moved|user (not local|has moved)|moved permanently/i },
  // Exim: "Unrouteable address"; Postfix: "Host or domain name not found. Name service error for name=example.invalid type=A: Host not found"
  // Sendmail: "couldn't find any host named example.invalid"; "Host name is unknown"
  // Exim: "all relevant MX records point to non-existent hosts", "all host address lookups failed permanently".
  // A malformed reply from the resolver (Postfix: "Name service error for name=example.net type=MX:
  // Malformed or unexpected name server reply", older "Malformed name server reply") is a DNS
  // failure too, whatever the status around it; temporary, so it suppresses nothing (domain/outcome.ts, TRANSIENT).
  {
    label: 'dns_failure',
    text: /couldn.t find any host (named|by that name)|point to non-?existent hosts?|host address lookups? failed permanently|malformed (or unexpected )?(name ?server|dns|resolver) (reply|response|answer)|host ?name is unknown|no such host|unroutable|unrouteable|dns lookup failure|host \S+ not found|domain (is )?not reachable|not accepting (network )?(messages|mail)|host or domain name not found|name service error|domain (name )?(not found|does not exist|unknown|invalid)|(host|domain) unknown|unknown (host|domain)|no such domain|non-?existent domain|nxdomain|no (mx|mail exchanger|valid mx)|dns error|no mail ?servers?|does not accept (e-?)?mail|null mx|host (not found|unknown)/i,
  },

  // InterScan: "Unable to deliver message to <a@b> (and other recipients in the same domain). Please check if address is correct."
  { label: 'unknown_recipient', text: /check (if|that|whether) (the )?(e-?mail )?address is correct/i },

  // ---- Connections and the remote system.
  // "Connection timed out" / "connect to mx.example.net[192.0.2.1]:25: Connection refused"
  { label: 'timeout', text: /timed? ?out|time ?out/i },
  {
    label: 'connection_failure',
    text: /connection (refused|reset|lost|closed|dropped|failure|failed)|lost connection|could not connect|unable to connect|couldn.t connect|no route to host|network (is )?unreachable|connect to \S+ failed|refused to talk|not reachable|host unreachable|unreachable/i,
  },
  // "452 4.3.1 Insufficient system storage" (the server's disk, not the mailbox); local delivery agents
  {
    label: 'other',
    text: /insufficient system (storage|resources)|system (error|failure|config)|local (error|configuration)|internal (server )?error|mailer error|command output|temporary (local )?problem|try again later/i,
  },

  // ---- Enhanced status codes (RFC 3463) without a better clue in the text.
  { label: 'unknown_recipient', enhanced: /^[45]\.1\.(1|6|0|3|9)$/ },
  // "550 5.1.2 Host unknown" / "5.1.10 Recipient address has null MX" (RFC 7505)
  { label: 'dns_failure', enhanced: /^[45]\.1\.(2|10)$/ },
  { label: 'mailbox_disabled', enhanced: /^[45]\.2\.1$/ },
  { label: 'other', enhanced: /^[45]\.3\.\d{1,3}$/ },
  // "451 4.4.3 Directory server failure" / "4.4.1 No answer from host"
  { label: 'dns_failure', enhanced: /^[45]\.4\.(3|4)$/ },
  { label: 'connection_failure', enhanced: /^[45]\.4\.[1256]$/ },
  // "550 5.7.1 Relaying denied" and other security/policy refusals without a better clue
  { label: 'policy', enhanced: /^[45]\.7\.\d{1,3}$/ },
  { label: 'other', enhanced: /^[45]\.[56]\.\d{1,3}$/ },

  // "421 Service not available, closing transmission channel" (no other clue)
  { label: 'connection_failure', code: /^421$/ },
];

/** The label for a remote reply. */
export function classifyReply(reply: ReplyText): Classification {
  const code = String(reply.code);
  for (const r of rules) {
    if (r.code && !r.code.test(code)) continue;
    if (r.enhanced && !r.enhanced.test(reply.enhanced_code)) continue;
    if (r.text && !r.text.test(reply.message)) continue;
    return r.label;
  }
  return 'other';
}

/**
 * Whether a text says the recipient's mailbox does not exist, and nothing in it puts the refusal
 * on the sender or the relay: the sentence that outweighs a policy status (x.7.x) given with it
 * (reports/verdict.ts).
 */
export function saysNoSuchMailbox(text: string): boolean {
  return MAILBOX_UNKNOWN.test(text) && !SENDER_SIDE.test(text) && !RELAY_DENIED.test(text);
}

/** Splits "550-5.1.1 text\n550 5.1.1 more" into code, enhanced code and text (multi-line joined). */
export function parseReply(response: string, fallbackCode = 0): ReplyText {
  const lines = response.split(/\r?\n/).filter((l) => l.length > 0);
  let code = fallbackCode;
  let enhanced = '';
  const texts: string[] = [];
  for (const line of lines) {
    const m = /^(\d{3})[ -]?(.*)$/.exec(line);
    if (!m) {
      texts.push(line.trim());
      continue;
    }
    code = Number(m[1]);
    let rest = m[2]!;
    const e = /^([245]\.\d{1,3}\.\d{1,3})\s*(.*)$/.exec(rest);
    if (e) {
      enhanced ||= e[1]!;
      rest = e[2]!;
    }
    texts.push(rest.trim());
  }
  return { code, enhanced_code: enhanced, message: texts.join(' ').replace(/\s+/g, ' ').trim() };
}
