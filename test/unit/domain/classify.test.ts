import t from 'tap';
import { CLASSIFICATIONS, classifyReply, parseReply } from '../../../src/domain/classify.js';

// Real-shaped replies from the servers each rule was written for, and the label they must get.
const table: Array<[string, string]> = [
  [
    '550 5.1.1 <bob@example.net>: Recipient address rejected: User unknown in virtual mailbox table',
    'unknown_recipient',
  ],
  [
    "550-5.1.1 The email account that you tried to reach does not exist. Please try\n550-5.1.1 double-checking the recipient's email address for typos or\n550 5.1.1 unnecessary spaces. https://support.google.com/mail/?p=NoSuchUser",
    'unknown_recipient',
  ],
  ['550 5.2.1 The email account that you tried to reach is disabled.', 'mailbox_disabled'],
  ['525 5.7.13 <a@example.org>: Recipient address rejected: User account disabled', 'mailbox_disabled'],
  ['550 Mailbox is frozen. See http://mail.i.ua/err/3/', 'mailbox_disabled'],
  ['550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup', 'unknown_recipient'],
  ['550 5.4.1 Recipient address rejected: Access denied. AS(201806281)', 'unknown_recipient'],
  ['550 <a@ne.auone-net.jp>: Recipient address rejected.', 'unknown_recipient'],
  ['User some.name (a@example.jp) not listed in Domino Directory', 'unknown_recipient'],
  ['550 5.5.0 Adresse destinataire invalide. Invalid recipient. LPN007_416', 'unknown_recipient'],
  ['550 5.1.1 RCP-P2 http://postmaster.facebook.com/response_codes#rcp Refused due to recipient preferences', 'policy'],
  ['553 5.1.8 <shop@example.com>: Sender address rejected: Domain not found', 'policy'],
  ['550 5.7.1 <bob@example.net>... Relaying denied', 'policy'],
  ['450 4.7.1 Client host rejected: cannot find your reverse hostname, [192.0.2.1]', 'policy'],
  ['550 5.7.1 Message rejected: virus found (Eicar-Test-Signature)', 'policy'],
  ['554 5.4.6 Mail loop detected', 'other'],
  ['mailbox is full: retry timeout exceeded', 'mailbox_full'],
  ['retry timeout exceeded', 'expired'],
  ['451 4.4.7 Delivery time expired', 'expired'],
  ['Host or domain name not found. Name service error for name=example.invalid type=A: Host not found', 'dns_failure'],
  ['550 Host does not accept mail', 'dns_failure'],
  ['all relevant MX records point to non-existent hosts', 'dns_failure'],
  ['all host address lookups failed permanently', 'dns_failure'],
  ['550 5.0.0 Malformed or unexpected name server reply', 'dns_failure'],
  ['Name service error for name=example.net type=MX: Malformed name server reply', 'dns_failure'],
  ['550 5.7.1 User unknown or access denied', 'unknown_recipient'],
  ['554 5.7.1 <bob@example.net>: Administrative prohibition: user unknown', 'unknown_recipient'],
  ['550 5.7.1 Sender verify failed: no such user', 'policy'],
  ["Your message was rejected by the recipient's filter.", 'policy'],
  [
    '550-5.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered.',
    'rate_limited',
  ],
  [
    "554 delivery error: dd This user doesn't have a yahoo.com account (bob@yahoo.com) [0] - mta1.mail.yahoo.com",
    'unknown_recipient',
  ],
  ['550 Requested action not taken: mailbox unavailable', 'unknown_recipient'],
  ['554 5.0.0 <bob@example.net>: #5.1.1 Exchange: no such user', 'unknown_recipient'],
  [
    '452-4.2.2 The email account that you tried to reach is over quota. Please direct\n452 4.2.2 the recipient to https://support.google.com/mail/?p=OverQuotaTemp',
    'mailbox_full',
  ],
  ['552 5.2.2 Mailbox full', 'mailbox_full'],
  ['552 5.3.4 Message size exceeds fixed maximum message size', 'message_too_large'],
  ['552 Message size exceeds maximum permitted', 'message_too_large'],
  [
    '554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/192.0.2.1',
    'spam_block',
  ],
  ['550-5.7.1 [192.0.2.1] Our system has detected that this message is likely unsolicited mail.', 'spam_block'],
  ['550 5.7.606 Access denied, banned sending IP [192.0.2.1]', 'spam_block'],
  ['550 zen.example.test Listed by CSS', 'spam_block'],
  ["550 5.7.26 Unauthenticated email from example.com is not accepted due to domain's DMARC policy", 'policy'],
  ['550 5.7.515 Access denied, sending domain example.com does not meet the required authentication level.', 'policy'],
  ['550 5.7.1 Relaying denied', 'policy'],
  [
    '421-4.7.28 [192.0.2.1] Our system has detected an unusual rate of unsolicited mail originating from your IP address.',
    'rate_limited',
  ],
  ["421 RP-001 (BAY004-MC1F2) Unfortunately, some messages from 192.0.2.1 weren't sent.", 'rate_limited'],
  [
    '421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints',
    'rate_limited',
  ],
  ['451 4.7.500 Server busy. Please try again later from [192.0.2.1]. (S77719)', 'rate_limited'],
  ['450 4.2.1 The user you are trying to contact is receiving mail too quickly.', 'rate_limited'],
  [
    '451 4.7.1 <bob@example.net>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.net.html',
    'greylisted',
  ],
  ['530 5.7.0 Must issue a STARTTLS command first', 'tls_failure'],
  ['451 4.4.3 Directory server failure', 'dns_failure'],
  ['550 5.1.2 Host unknown', 'dns_failure'],
  ['556 5.1.10 Recipient address has null MX', 'dns_failure'],
  ['421 Service not available, closing transmission channel', 'connection_failure'],
  ['451 4.3.0 Temporary lookup failure', 'other'],
  ['554 Transaction failed', 'other'],
  // Wordings that come without a reply code as often as with one, from other bouncers' test data.
  ['Receiver not found: lallison', 'unknown_recipient'],
  ['Does not have a final email delivery point, please contact this person by alternate means.', 'unknown_recipient'],
  ["550 sorry, this server doesn't handle mail for that user", 'unknown_recipient'],
  ['bob@example.de: Benutzer unbekannt', 'unknown_recipient'],
  ['Destinatario sconosciuto o mailbox disattivata', 'unknown_recipient'],
  ['553 5.3.0 <a@example.net>... Addressee unknown, relay=[192.0.2.10]', 'unknown_recipient'],
  ["couldn't find any host named example.invalid", 'dns_failure'],
  ['552 Quota violation for a@example.com', 'mailbox_full'],
  ['User has exhausted allowed storage space', 'mailbox_full'],
  ['552 Message for <a@example.com> would exceed mailbox quota', 'mailbox_full'],
  // A message removed from a queue is no account removed.
  ['The attached message has been removed from the mail queue on this server.', 'other'],
  ['recipient (User account is expired)', 'mailbox_disabled'],
  [
    'Your mail to the following recipients could not be delivered because they are not accepting mail with attachments or embedded images',
    'policy',
  ],
];

t.test('the classifier labels real-shaped replies', async (t) => {
  for (const [reply, label] of table) t.equal(classifyReply(parseReply(reply)), label, reply.slice(0, 70));
});

t.test('every label is reachable and documented in the set', async (t) => {
  const seen = new Set(table.map(([, l]) => l));
  for (const l of seen) t.ok((CLASSIFICATIONS as readonly string[]).includes(l), l);
});

t.test('parseReply joins multi-line replies and reads the enhanced code', async (t) => {
  t.same(parseReply('250-first\r\n250 2.0.0 Ok: queued as ABC'), {
    code: 250,
    enhanced_code: '2.0.0',
    message: 'first Ok: queued as ABC',
  });
  t.same(parseReply('550 no enhanced code'), { code: 550, enhanced_code: '', message: 'no enhanced code' });
  t.equal(parseReply('421-4.7.28 a\n421 4.7.28 b').enhanced_code, '4.7.28');
});
