/** Delivery outcomes are values (docs/architecture.md); SMTP codes are mapped to them once, at the SMTP edge. */
export interface Reply {
  code: number;
  enhanced_code: string;
  message: string;
  classification: string;
}

/** A Reply from its parts (the replies posthaste states itself: DNS failures, the simulator, local errors). */
export function reply(code: number, enhanced: string, message: string, classification = 'other'): Reply {
  return { code, enhanced_code: enhanced, message, classification };
}

/** The pool and source address an attempt went from (outbound.pools); absent without pools. */
export interface Source {
  pool: string;
  ip: string;
}

export type Outcome =
  /** `tlsVerified`: the server's certificate was checked (DANE, MTA-STS enforce, the relay host), not only encrypted to. */
  | { kind: 'delivered'; reply: Reply; mx: string; tls: boolean; tlsVerified: boolean; source?: Source }
  /** Temporary: the recorder turns it into a retry, or into an `expired` bounce past max_queue_time. */
  | { kind: 'deferred'; reply: Reply; mx?: string; source?: Source }
  /** `suppress`: the failure puts the address on the suppression list (suppressFor, decided where the failure was read). */
  | { kind: 'bounced'; bounceType: 'hard' | 'async' | 'expired'; reply: Reply; suppress: boolean; source?: Source }
  /** On the suppression list when its turn came: nothing is sent. */
  | { kind: 'suppressed'; reason: string };

/**
 * Which permanent failures put the address on the suppression list (docs/delivery.md, "Suppression
 * policy"). An address that does not exist is suppressed; a cause on the sender's side (its IP's
 * reputation, its PTR, authentication, relaying, content) or a temporary one (expiry, loops, the
 * network) never is: suppressing on those would silence a customer's whole list the day their IP
 * is listed. A full mailbox and a disabled account are the address's, but often pass: each is a
 * setting.
 */
export interface SuppressionPolicy {
  /** Suppress on a permanent "mailbox full" (abandoned mailboxes stay full). */
  mailboxFull: boolean;
  /** Suppress on a permanent "account disabled" (Gmail disables inactive accounts, and deletes them later). */
  disabled: boolean;
}

export const DEFAULT_SUPPRESSION: SuppressionPolicy = { mailboxFull: false, disabled: false };

/** Whether a permanent failure with this classification suppresses the address. */
export function suppresses(classification: string, policy: SuppressionPolicy = DEFAULT_SUPPRESSION): boolean {
  switch (classification) {
    case 'unknown_recipient':
    case 'dns_failure':
      return true;
    case 'mailbox_full':
      return policy.mailboxFull;
    case 'mailbox_disabled':
      return policy.disabled;
    default:
      return false;
  }
}

/** The SMTP command a reply answered. */
export type SmtpStage = 'connect' | 'mail' | 'rcpt' | 'data';

/** What is known of a permanent failure (a 5xx, or a report's failed recipient with a 5.x.x status). */
export interface FailureFacts {
  classification: string;
  /** Enhanced status code, when there is one. */
  status: string | null;
  /** The command the reply answered, where it is known. */
  stage: SmtpStage | null;
  /** The reply's or the diagnostic's text. */
  text: string;
}

/**
 * The words of a failure that its sender meant as temporary, whatever the code says; among them
 * a resolver that did not answer, which says nothing of whether the domain exists (Postfix: "Name
 * service error for name=example.net type=MX: Host not found, try again"; Exim: "host lookup did
 * not complete"; Sendmail: "Name server timeout"; "DNS query timed out"; "Temporary lookup failure").
 * A malformed reply from the resolver is one of them (Postfix: "Name service error for
 * name=example.net type=MX: Malformed or unexpected name server reply"; "Malformed name server
 * reply"): a broken or tampered answer on the way, which says nothing of whether the domain
 * exists, so the same words suppress nothing under 5.0.0, 5.4.4 or any other status.
 */
const TRANSIENT =
  /try again later|, try again\b|temporar(il)?y|malformed (or unexpected )?(name ?server|dns|resolver) (reply|response|answer)|(name ?server|dns|resolver) (reply|response) (was )?malformed|\bFORMERR\b|SERVFAIL|lookup did not complete|(name ?server|dns|resolver|lookup|name service|query)[^.;]{0,30}(time ?out|timed out)|(time ?out|timed out)[^.;]{0,30}(dns|name ?server|resolver|lookup|resolving)/i;

/** The bare "user unknown" of a reply, and nothing more specific ("550 Unknown user a@b", "550 : User unknown"). */
const BARE_USER_UNKNOWN =
  /^\s*(\d{3}[\s:-]*)?([245]\.\d{1,3}\.\d{1,3}\s*)?[\s:]*(<[^>]*>[\s.:]*)?(user unknown|unknown user)\b/i;

/**
 * Whether a permanent failure suppresses the address: the classification blames the address
 * (suppresses), and the verdict is certain. Not certain: a refusal of MAIL FROM or of the
 * connection (the sender's or the network's, whatever the words); a failure worded as temporary;
 * and the bare "user unknown" after DATA without an address status (x.1.x), because the server
 * accepted the address at RCPT TO and some providers' content filters refuse mail that way
 * (NTT docomo and KDDI answer "550 Unknown user" to mail the recipient's own settings refuse), so
 * the address may well be good. Yahoo's "This user doesn't have a yahoo.com account", also after
 * DATA, is a verdict.
 */
export function suppressFor(f: FailureFacts, policy: SuppressionPolicy = DEFAULT_SUPPRESSION): boolean {
  if (!suppresses(f.classification, policy)) return false;
  if (f.stage === 'mail' || f.stage === 'connect' || TRANSIENT.test(f.text)) return false;
  if (f.classification !== 'unknown_recipient' || f.stage !== 'data') return true;
  return (f.status !== null && /^5\.1\.\d+$/.test(f.status)) || !BARE_USER_UNKNOWN.test(f.text);
}

/** Delay before the next attempt after `attempts` failed ones (1-based); the last step repeats. */
export function retryDelay(schedule: number[], attempts: number): number {
  return schedule[Math.min(Math.max(attempts, 1), schedule.length) - 1]!;
}
