import { check, mail, report } from '../../helpers/report-patterns.js';

// What a status says: read where a status is written, a verdict of its own where no reply is
// quoted, and the wordings that outweigh it. The pattern tables' helpers, and what the tables are
// for: test/helpers/report-patterns.ts.

// ---- A status is read where a status is written, not from version numbers.
check([
  {
    says: "a version number in the reporting system's name is not a status",
    raw: mail(`
From: MAILER-DAEMON@mx.example.org
To: bounces+tok@mail.example.com
Subject: Undeliverable Mail

Reporting system: MDaemon 5.0.6

Unknown user: bob@example.net
`),
    recipients: [{ address: 'bob@example.net', status: '5.0.0', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: "a version number in the original's Subject quoted in the notification is not a status",
    raw: mail(`
From: <mailer-daemon@mail.example.org>
To: <bounces+tok@mail.example.com>
Subject: Undeliverable: Release 5.2.1 is out

Your message did not reach some or all of the intended recipients.

   Subject: Release 5.2.1 is out
   Sent: Fri, 13 Feb 2009 16:57:55 -0800

The following recipient(s) could not be reached:

bob@example.net
   The e-mail account does not exist at the organization this message was sent to.
`),
    recipients: [{ address: 'bob@example.net', status: '5.0.0', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: "a server's greeting in a transcript gives no status; the reply to RCPT TO does",
    raw: mail(`
From: MAILER-DAEMON@mx.example.org
To: bounces+tok@mail.example.com
Subject: Returned mail: see transcript for details

   ----- Transcript of session follows -----
<<< 220 mx.example.net ESMTP Exim 4.92.3
>>> RCPT To:<bob@example.net>
<<< 550 No such recipient here
550 5.1.1 <bob@example.net>... User unknown
`),
    recipients: [{ address: 'bob@example.net', status: '5.1.1', replyCode: 550, suppress: true }],
  },
  {
    says: 'a status after a colon in a reply is a status ("RCPT TO not accepted: 5.7.1 ...")',
    raw: report(
      'The mail system',
      'Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: 5.0.0\nDiagnostic-Code: X-Postfix; host mx.example.net said: 501 RCPT TO not accepted: 5.7.1 This system is not configured to relay mail',
    ),
    recipients: [{ address: 'bob@example.net', status: '5.7.1', classification: 'policy', suppress: false }],
  },
]);

// ---- A status without a reply code says what it says.
check([
  {
    says: "an x.1.1 status with no Diagnostic-Code is an unknown address, whatever a virus scanner's footer in the notification says",
    raw: report(
      'Delivery to the following recipients failed.\n\n       bob@example.net\n\n**** This email has been scanned for viruses and potentially offensive content ****',
      'Original-Recipient: rfc822;bob@example.net\nFinal-Recipient: rfc822;bob@example.net\nAction: failed\nStatus: 5.1.1',
    ),
    recipients: [
      {
        address: 'bob@example.net',
        status: '5.1.1',
        replyCode: null,
        classification: 'unknown_recipient',
        suppress: true,
      },
    ],
  },
  {
    says: 'an x.1.2 status alone is a host that does not exist',
    raw: report('Delivery has failed.', 'Final-Recipient: rfc822;bob@example.invalid\nAction: failed\nStatus: 5.1.2'),
    recipients: [{ address: 'bob@example.invalid', classification: 'dns_failure', suppress: true }],
  },
  {
    says: 'an x.1.10 status alone is a domain that takes no mail (null MX)',
    raw: report('Delivery has failed.', 'Final-Recipient: rfc822;bob@example.net\nAction: failed\nStatus: 5.1.10'),
    recipients: [{ address: 'bob@example.net', classification: 'dns_failure', suppress: true }],
  },
  {
    says: 'a 4.x.x status is temporary, never suppressed, even where the action says failed',
    raw: report('Delivery has failed.', 'Final-Recipient: rfc822;bob@example.net\nAction: failed\nStatus: 4.2.2'),
    recipients: [
      { address: 'bob@example.net', status: '4.2.2', classification: 'mailbox_full', permanent: true, suppress: false },
    ],
  },
  {
    says: 'a text bounce without any code that says the user is unknown suppresses the address',
    raw: mail(`
From: MAILER-DAEMON@mx.example.org
To: bounces+tok@mail.example.com
Subject: failure notice

I'm afraid I wasn't able to deliver your message to the following addresses.

<bob@example.net>:
Sorry, no mailbox here by that name.
`),
    recipients: [
      {
        address: 'bob@example.net',
        status: '5.0.0',
        replyCode: null,
        classification: 'unknown_recipient',
        suppress: true,
      },
    ],
  },
]);

// ---- Wordings for unknown users and hosts, with no reply code or a status that says otherwise.
check([
  {
    says: 'an unknown addressee is unknown even with a 5.3.0 status',
    raw: mail(`
From: "Postmaster" <postmaster@mail.example.org>
To: <bounces+tok@mail.example.com>
Subject: Undeliverable Mail
X-Mailer: <SMTP32 v8.15>

Unknown user: bob@example.net

RCPT TO generated following response:
553 5.3.0 <bob@example.net>... Addressee unknown, relay=[192.0.2.10]
`),
    recipients: [{ address: 'bob@example.net', status: '5.3.0', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: 'an unknown user said in German, with no code, suppresses the address',
    raw: mail(`
From: MAILER-DAEMON@mx.example.de
To: bounces+tok@mail.example.com
Subject: Unzustellbar: Ihre Bestellung

Ihre Nachricht konnte nicht zugestellt werden. Message could not be delivered to:

  bob@example.de: Benutzer unbekannt
`),
    recipients: [{ address: 'bob@example.de', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: 'an address that does not exist, said in French, suppresses it',
    raw: mail(`
From: postmaster@example.fr
To: bounces+tok@mail.example.com
Subject: Utilisateur non recensé dans l'annuaire

A message could not be delivered to:
bob@example.fr
L'adresse de messagerie référencée ci-dessus n'existe pas. Veuillez en vérifier l'orthographe.
`),
    recipients: [{ address: 'bob@example.fr', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: 'a mailbox quota that a message would exceed is a full mailbox, and a message removed from the queue is no account removed',
    raw: mail(`
From: MDaemon@mail.example.org
To: bounces+tok@mail.example.com
Subject: Permanent Delivery Failure

After one or more unsuccessful delivery attempts the attached message has
been removed from the mail queue on this server.

The following addresses did NOT receive a copy of your message:

> bob@example.net

--- Session Transcript ---
 RCPT To:<bob@example.net>
 552 Message for <bob@example.net> would exceed mailbox quota
--- End Transcript ---
`),
    recipients: [{ address: 'bob@example.net', replyCode: 552, classification: 'mailbox_full', suppress: false }],
  },
  {
    says: 'a host that cannot be found, said without a code, suppresses the address',
    raw: mail(`
From: MAILER-DAEMON@mx.example.org
To: bounces+tok@mail.example.com
Subject: Returned mail: Host unknown

----- The following addresses had permanent fatal errors -----
<bob@example.invalid>
    couldn't find any host named example.invalid
`),
    recipients: [{ address: 'bob@example.invalid', classification: 'dns_failure', suppress: true }],
  },
  {
    says: 'a resolver that did not answer, under a generic 5.0.0, is temporary and suppresses nothing',
    raw: report(
      'The mail system',
      'Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: 5.0.0\nDiagnostic-Code: X-Postfix; Host or domain name not found. Name service error for name=example.net type=MX: Host not found, try again',
    ),
    recipients: [{ address: 'bob@example.net', classification: 'dns_failure', suppress: false }],
  },
  {
    says: 'a DNS lookup that timed out suppresses nothing',
    raw: report(
      'The mail system',
      'Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: 5.0.0\nDiagnostic-Code: smtp; 554 5.4.4 DNS lookup timed out for example.net',
    ),
    recipients: [{ address: 'bob@example.net', suppress: false }],
  },
  {
    says: 'a host lookup that did not complete suppresses nothing',
    raw: mail(`
From: Mail Delivery System <Mailer-Daemon@mx.example.org>
To: bounces+tok@mail.example.com
Subject: Mail delivery failed: returning message to sender

This message was created automatically by mail delivery software.

A message that you sent could not be delivered to one or more of its
recipients. This is a permanent error. The following address(es) failed:

  bob@example.net
    Unrouteable address: host lookup did not complete
`),
    recipients: [{ address: 'bob@example.net', classification: 'dns_failure', suppress: false }],
  },
]);
