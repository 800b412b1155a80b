/**
 * Bounce and deferral classification: a pure function of the reply code, the enhanced status
 * code and the text. Retry-or-fail is decided elsewhere by the reply code's first digit; the label
 * says why. Rules are tried in order; the first match wins. Each carries the kind of real reply it
 * was written for.
 */

export const CLASSIFICATIONS = [
  'unknown_recipient',
  'mailbox_full',
  'message_too_large',
  'spam_block',
  'policy',
  'rate_limited',
  'greylisted',
  'dns_failure',
  'connection_failure',
  'tls_failure',
  'timeout',
  'other',
] as const;
export type Classification = (typeof CLASSIFICATIONS)[number];

export interface ReplyFacts {
  code: number;
  enhanced: string;
  text: string;
}

interface Rule {
  label: Classification;
  code?: RegExp;
  enhanced?: RegExp;
  text?: RegExp;
}

const rules: Rule[] = [
  // Provider and text rules first: they know better than the generic code.

  // Gmail: "421-4.7.28 Our system has detected an unusual rate of unsolicited mail ... rate limited"
  { label: 'rate_limited', enhanced: /^4\.7\.28$/ },
  // Hotmail/Outlook: "421 RP-001 (BAY004-MC1F2) Unfortunately, some messages ... rate limit"
  { label: 'rate_limited', text: /\bRP-00\d\b/ },
  // Yahoo: "421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume"
  { label: 'rate_limited', text: /\[TS[S0-9]\d+\]/ },
  // "450 4.2.1 The user you are trying to contact is receiving mail too quickly" (Gmail)
  { label: 'rate_limited', text: /too quickly|rate limit|too many (connections|messages)|throttl|slow down|unexpected volume/i },
  // Postgrey: "450 4.2.0 <a@b>: Recipient address rejected: Greylisted, see http://postgrey..."
  { label: 'greylisted', code: /^4/, text: /grey-?list|gray-?list/i },
  // Postfix RBL: "554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org"
  { label: 'spam_block', text: /blocked using|spamhaus|barracuda|spamcop|sorbs|block ?list|black ?list|listed (at|in|on)\b|poor reputation|\breputation\b/i },
  // Gmail: "550-5.7.1 Our system has detected that this message is likely unsolicited mail"
  { label: 'spam_block', text: /unsolicited|\bspam\b|junk mail|content rejected|message (was )?(blocked|rejected) (as|for) (spam|policy)/i },
  // Microsoft: "550 5.7.606 Access denied, banned sending IP [192.0.2.1]" and S3150 blocks
  { label: 'spam_block', enhanced: /^5\.7\.(606|511)$/ },
  { label: 'spam_block', text: /\bS3150\b|banned sending ip/i },
  // Gmail/Yahoo/Microsoft sender-authentication rules: "550 5.7.26 Unauthenticated email from example.com is not accepted"
  // and "550 5.7.515 Access denied, sending domain ... does not meet the required authentication level".
  { label: 'policy', enhanced: /^[45]\.7\.(2[0-7]|29|30|32|40|515)$/ },
  // "550 5.7.1 Unauthenticated email ... DMARC policy" / "5.7.1 ... SPF"
  { label: 'policy', text: /\bDMARC\b|\bSPF\b|\bDKIM\b|authentication (failed|required|level)/i },
  // "530 5.7.0 Must issue a STARTTLS command first" / "421 4.7.0 TLS required"
  { label: 'tls_failure', text: /STARTTLS|TLS required|encryption required/i },
  { label: 'tls_failure', enhanced: /^[45]\.7\.1[01]$/ },

  // Enhanced status codes (RFC 3463).
  // Postfix: "550 5.1.1 <bob@example.net>: Recipient address rejected: User unknown in virtual mailbox table"
  { label: 'unknown_recipient', enhanced: /^[45]\.1\.(1|6|0|3)$/ },
  // "550 5.1.2 Host unknown" / "5.1.10 Recipient address has null MX" (RFC 7505)
  { label: 'dns_failure', enhanced: /^[45]\.1\.(2|10)$/ },
  // "550 5.2.1 The email account that you tried to reach is disabled" (Gmail)
  { label: 'unknown_recipient', enhanced: /^5\.2\.1$/ },
  // Gmail: "452-4.2.2 The email account that you tried to reach is over quota"
  { label: 'mailbox_full', enhanced: /^[45]\.2\.2$/ },
  // "552 5.3.4 Message size exceeds fixed maximum message size" / "552 5.2.3 ... too big"
  { label: 'message_too_large', enhanced: /^[45]\.(2\.3|3\.4)$/ },
  // "452 4.3.1 Insufficient system storage" (the server's disk, not the mailbox)
  { label: 'other', enhanced: /^[45]\.3\.1$/ },
  // "451 4.4.3 Directory server failure" / "4.4.1 No answer from host"
  { label: 'dns_failure', enhanced: /^[45]\.4\.3$/ },
  { label: 'connection_failure', enhanced: /^[45]\.4\.[12]$/ },
  // "550 5.7.1 Relaying denied" and other security/policy refusals without a better clue
  { label: 'policy', enhanced: /^[45]\.7\.\d{1,3}$/ },

  // Text without a usable enhanced code (Exchange "#5.1.1", qmail, old servers).
  // "550 Requested action not taken: mailbox unavailable" / "550 No such user here"
  // Yahoo: "554 delivery error: dd This user doesn't have a yahoo.com account (bob@yahoo.com)"
  { label: 'unknown_recipient', text: /user unknown|unknown user|no such (user|mailbox|recipient)|does not exist|mailbox (not found|unavailable)|invalid recipient|recipient (address )?rejected|address rejected|doesn'?t have an? \S+ account|#5\.1\.1/i },
  // "552 Mailbox full" / "Quota exceeded"
  { label: 'mailbox_full', text: /over ?quota|quota exceeded|mailbox (is )?full|insufficient storage|out of storage/i },
  // "552 Message size exceeds maximum permitted"
  { label: 'message_too_large', code: /^5/, text: /too (big|large)|size (limit|exceed)|exceeds? .*size/i },
  // "550 DNS error" / "Domain not found"
  { label: 'dns_failure', text: /DNS error|domain not found|host (not found|unknown)|no such domain/i },
  // "421 Service not available, closing transmission channel" (no other clue)
  { label: 'connection_failure', code: /^421$/ },
];

/** The label for a remote reply. */
export function classifyReply(reply: ReplyFacts): Classification {
  const code = String(reply.code);
  for (const r of rules) {
    if (r.code && !r.code.test(code)) continue;
    if (r.enhanced && !r.enhanced.test(reply.enhanced)) continue;
    if (r.text && !r.text.test(reply.text)) continue;
    return r.label;
  }
  return 'other';
}

/** Splits "550-5.1.1 text\n550 5.1.1 more" into code, enhanced code and text (multi-line joined). */
export function parseReply(response: string, fallbackCode = 0): ReplyFacts {
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
  return { code, enhanced, text: texts.join(' ').replace(/\s+/g, ' ').trim() };
}
