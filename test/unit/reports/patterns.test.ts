import t from 'tap';
import { readReport } from '../../../src/reports/read.js';
import type { ReportRecipient } from '../../../src/domain/report.js';

// Each pattern the reader knows, in a small message written in the shape of the mail systems
// that use it (the wording is theirs, the rest is ours), beside the reading it must give. The
// corpus test reads real bounces; these pin down one pattern each, so that a rule that breaks
// says which sender's wording it broke.

/** A message from its lines: header fields, a blank line, the body (LF in the source, CRLF on the wire). */
function mail(text: string): Buffer {
  return Buffer.from(text.replace(/^\n/, '').replace(/\r?\n/g, '\r\n'), 'latin1');
}

/** A multipart/report: the notification, the delivery-status fields, and the original's headers. */
function report(notification: string, fields: string, original = 'From: shop@example.com\nTo: bob@example.net\nSubject: Your order\n'): Buffer {
  return mail(`
From: Mail Delivery System <MAILER-DAEMON@mx.example.org>
To: bounces+tok@mail.example.com
Subject: Undelivered Mail Returned to Sender
Content-Type: multipart/report; report-type=delivery-status; boundary=b

--b
Content-Type: text/plain

${notification}
--b
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org

${fields}
--b
Content-Type: text/rfc822-headers

${original}
--b--
`);
}

type Expected = Partial<Pick<ReportRecipient, 'action' | 'status' | 'replyCode' | 'classification' | 'permanent' | 'suppress' | 'originalRecipient'>> & { address: string };

interface Case {
  /** What the reader must do, as a sentence. */
  says: string;
  raw: Buffer;
  /** The failed recipients, all of them, in order; none for a message that is not a bounce. */
  recipients: Expected[] | 'none';
}

function check(cases: Case[]) {
  for (const c of cases) {
    t.test(c.says, async (t) => {
      const r = readReport(c.raw);
      if (c.recipients === 'none') {
        t.equal(r.kind, 'none', 'not a bounce');
        t.same(r.recipients, []);
        return;
      }
      t.equal(r.kind, 'dsn');
      t.same(
        r.recipients.map((x) => x.address),
        c.recipients.map((x) => x.address),
        'the failed recipients, and no one else',
      );
      for (const [i, e] of c.recipients.entries()) t.match(r.recipients[i], e, e.address);
    });
  }
}

// ---- 1. The failed recipient, never the sending side.
check([
  {
    says: 'the sender Exim names in "A message sent by" is not a failed recipient',
    raw: mail(`
From: Mail Delivery System <Mailer-Daemon@mx.example.org>
To: bounces+tok@mail.example.com
Subject: Mail delivery failed

This message was created automatically by mail delivery software.

A message sent by

  <shop@example.com>

could not be delivered to one or more of its recipients. The following
address(es) failed:

  bob@example.net
    SMTP error from remote mail server after RCPT TO:<bob@example.net>:
    host mx.example.net [192.0.2.7]: 550 5.1.1 No such user
`),
    recipients: [{ address: 'bob@example.net', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: 'the sender Sendmail names in "The original message was received ... from" is not a failed recipient',
    raw: mail(`
From: Mail Delivery Subsystem <MAILER-DAEMON@mx.example.org>
To: bounces+tok@mail.example.com
Subject: Returned mail: see transcript for details

The original message was received at Mon, 2 Mar 2009 10:00:00 +0100
from shop@example.com [192.0.2.1]

   ----- The following addresses had permanent fatal errors -----
<bob@example.net>
    (reason: 550 5.1.1 <bob@example.net>... User unknown)
`),
    recipients: [{ address: 'bob@example.net', status: '5.1.1', suppress: true }],
  },
  {
    says: "a mailing list's own address, named in the bounce and in the original's List-Post, is not a failed recipient",
    raw: mail(`
From: postmaster@mx.example.net
To: news-bounces@lists.example.org
Subject: Undeliverable: [News] This week
Content-Type: multipart/mixed; boundary=b

--b
Content-Type: text/plain

Your message to news@lists.example.org could not be delivered to the following recipient:

  bob@example.net
  Reason: mailbox unavailable

--b
Content-Type: message/rfc822

From: editor@example.com
To: news@lists.example.org
List-Post: <mailto:news@lists.example.org>
List-Id: News <news.lists.example.org>
Subject: [News] This week

Hello.
--b--
`),
    recipients: [{ address: 'bob@example.net', classification: 'unknown_recipient' }],
  },
  {
    says: 'a recipient named only in an unusual field ("Intended recipient:") is found, and the "Original sender:" beside it is not',
    raw: mail(`
From: postmaster@mail.example.net
To: bounces+tok@mail.example.com
Subject: Delivery failure

Original sender: shop@example.com
Intended recipient: bob@example.net
Reason: no such user here

--------RETURNED MAIL FOLLOWS--------
`),
    recipients: [{ address: 'bob@example.net', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: "a bounce that names only its sender, in prose, fails the original's recipient, never the sender",
    raw: mail(`
From: MAILER-DAEMON@mx.example.net
To: bounces+tok@mail.example.com
Subject: failure notice
Content-Type: multipart/mixed; boundary=b

--b
Content-Type: text/plain

Your message from shop@example.com could not be delivered: user unknown.

--b
Content-Type: text/rfc822-headers

From: shop@example.com
To: bob@example.net
Subject: Your order
--b--
`),
    recipients: [{ address: 'bob@example.net', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: 'the sender AOL greets with "Sorry" is not a failed recipient; the local part it lists is, at its domain',
    raw: mail(`
From: Mail Delivery Subsystem <MAILER-DAEMON@aol.example>
To: <shop@example.com>
Subject: Mail Delivery Problem

Sorry shop@example.com. Your mail to the following recipients could not be delivered because they are not accepting mail with attachments or embedded images:
	bobsmith
`),
    recipients: [{ address: 'bobsmith@aol.example', classification: 'policy', suppress: false }],
  },
]);

// ---- 2. Addresses without their decorations.
check([
  {
    says: 'an Exchange type prefix in Final-Recipient ("SMTP:bob@example.net") is not part of the address',
    raw: report('Delivery has failed to these recipients.', 'Final-Recipient: rfc822;SMTP:bob@example.net\nAction: failed\nStatus: 5.1.1'),
    recipients: [{ address: 'bob@example.net', suppress: true }],
  },
  {
    says: "Exchange's IMCEA encapsulation of an Internet address is undone",
    raw: report('Delivery has failed to these recipients.', 'Final-Recipient: rfc822;IMCEASMTP-bob+40example+2Enet@exchange.example.org\nAction: failed\nStatus: 5.1.1'),
    recipients: [{ address: 'bob@example.net' }],
  },
  {
    says: 'Exchange IMS\'s X.400 form ("dda:SMTP=bob@example.net;") gives the Internet address',
    raw: mail(`
From: System Administrator <postmaster@example.org>
To: news-bounces@lists.example.org
Subject: Undeliverable: RE: Minutes

Your message

  To:      news@lists.example.org
  Subject: RE: Minutes

did not reach the following recipient(s):

c=US;a= ;p=Example;o=Mail;dda:SMTP=bob@example.net; on Fri, 4 Oct 2002
17:12:28 -0400
    The recipient name is not recognized
    MSEXCH:IMS:Example:Mail:IMS-01 0 (000C05A6) Unknown Recipient
`),
    recipients: [{ address: 'bob@example.net', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: 'Sendmail\'s "bob@example.net...User unknown" gives the address alone',
    raw: mail(`
From: MAILER-DAEMON@mx.example.org
To: bounces+tok@mail.example.com
Subject: Returned mail: User unknown

   ----- Transcript of session follows -----
550 bob@example.net...User unknown
`),
    recipients: [{ address: 'bob@example.net', suppress: true }],
  },
]);

// ---- 3. Addresses of a postmaster's explanation are not failed recipients.
check([
  {
    says: 'the address a bounce asks to be contacted is not a failed recipient',
    raw: mail(`
From: <MAILER-DAEMON@mta1.example.edu>
To: <news-bounces@lists.example.org>
Subject: Returned mail - nameserver error report

 --------Message not delivered to the following addresses:

            bob@example.edu

 --------Error Detail (phquery V3.0):

---- bob@example.edu
     Does not have a final email delivery point,
     please contact this person by alternate means.

Please contact helpdesk@example.edu if you have any questions.
`),
    recipients: [{ address: 'bob@example.edu', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: "example addresses and mail systems' own mailboxes in the help text are not failed recipients",
    raw: mail(`
From: Mail Administrator <mailer@relay.example.org>
To: bounces+tok@mail.example.com
Subject: Mail System Error - Returned Mail

The following recipients did not receive your message:

     <bob@example.net>

Addresses here are written as name@domain, e.g. jane.doe@example.org.
For further assistance, write to support@relay.example.org.
Report abuse to abuse@relay.example.org.
`),
    recipients: [{ address: 'bob@example.net' }],
  },
]);

check([
  {
    says: 'a directory\'s suggestions ("e.g., if ... fails, try ...", "try emailing to ... instead") are not failed recipients; the local part it lists is',
    raw: mail(`
From: MAILER-DAEMON@mr2.example.edu
To: news-bounces@lists.example.org
Subject: Returned mail - nameserver error report

 --------Message not delivered to the following:

 bob    No matches to nameserver query

 --------Error Detail (phquery V4.1):

 If no lookup tools are available to you, try sending to the most explicit form of the name, e.g., if
 jane.doe@example.edu fails, try jane.q.doe@example.edu.

 To reach a party that was formerly reachable by emailing NAME@example.edu,
 try emailing to NAME@cs.example.edu instead.
`),
    recipients: [{ address: 'bob@mr2.example.edu' }],
  },
  {
    says: 'addresses in prose that says nothing failed are not failed recipients; the one on a line that says what failed is',
    raw: mail(`
From: postmaster@example.gov (Automated response from postmaster)
To: news-bounces@lists.example.org
Subject: FAILED MAIL to "bob" regarding "This week"

The standard form of email address here is lastnameNumber@example.gov
although individuals may choose an alternate email address. The address to
which your message was addressed, bob@example.gov, did not exactly match an
email address here.

The following locator information may be of help in finding another means
of contacting "bob":

  Bob Smith            +1 925-000-0000       robert.smith@example.gov
`),
    recipients: [{ address: 'bob@example.gov' }],
  },
  {
    says: "an alias's original recipient stands for a failed address the text does not show",
    raw: mail(`
From: Mail Delivery System <Mailer-Daemon@mx.example.org>
To: bounces+tok@mail.example.com
Subject: Mail delivery failed: returning message to sender

A message that you sent could not be delivered to one or more of its
recipients. This is a permanent error. The following address(es) failed:

  an undisclosed address
    (generated from bob@example.net)
`),
    recipients: [{ address: 'bob@example.net' }],
  },
]);

// ---- 4. A status is read where a status is written, not from version numbers.
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

// ---- 5. A status without a reply code says what it says.
check([
  {
    says: "an x.1.1 status with no Diagnostic-Code is an unknown address, whatever a virus scanner's footer in the notification says",
    raw: report(
      'Delivery to the following recipients failed.\n\n       bob@example.net\n\n**** This email has been scanned for viruses and potentially offensive content ****',
      'Original-Recipient: rfc822;bob@example.net\nFinal-Recipient: rfc822;bob@example.net\nAction: failed\nStatus: 5.1.1',
    ),
    recipients: [{ address: 'bob@example.net', status: '5.1.1', replyCode: null, classification: 'unknown_recipient', suppress: true }],
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
    recipients: [{ address: 'bob@example.net', status: '4.2.2', classification: 'mailbox_full', permanent: true, suppress: false }],
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
    recipients: [{ address: 'bob@example.net', status: '5.0.0', replyCode: null, classification: 'unknown_recipient', suppress: true }],
  },
]);

// ---- 6. Wordings for unknown users and hosts, with no reply code or a status that says otherwise.
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
    raw: report('The mail system', 'Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: 5.0.0\nDiagnostic-Code: smtp; 554 5.4.4 DNS lookup timed out for example.net'),
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

// ---- 7. Challenge-response requests and delay warnings are not failures; plain-text bounces are.
check([
  {
    says: "a challenge-response system's request, even in a report's form, is not a bounce",
    raw: report(
      'Hello,\n\nYour message about "Your order" has been waitlisted.\nPlease add yourself to my Guest List so your messages will go to my Inbox.',
      'Final-Recipient: rfc822; bob@example.net\nDiagnostic-Code: X-Boxbe-Notice; Sender not pre-approved.  Follow instructions in above notice\nAction: failed\nStatus: 4.7.0',
    ),
    recipients: 'none',
  },
  {
    says: "TMDA's challenge is not a bounce",
    raw: mail(`
From: bob-confirm@example.net
To: bounces+tok@mail.example.com
Subject: Re: Your order (confirmation)
X-Delivery-Agent: TMDA/1.1.12 (Macallan)

This message was created automatically by mail delivery software.
Your message could not be delivered until you confirm it: reply to this message.
`),
    recipients: 'none',
  },
  {
    says: 'a request to prove the sender is a person is not a bounce',
    raw: mail(`
From: Mail Delivery System <mailer-daemon@filter.example.net>
To: bounces+tok@mail.example.com
Subject: Undelivered: please verify your message

Your message to bob@example.net has not been delivered yet.
Please click the link below to verify that you are a real person:
https://filter.example.net/verify?id=1234
`),
    recipients: 'none',
  },
  {
    says: "Gmail's delay notification is a delay, not a failure",
    raw: mail(`
From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>
To: bounces+tok@mail.example.com
Subject: Delivery Status Notification (Delay)

This is an automatically generated Delivery Status Notification

THIS IS A WARNING MESSAGE ONLY.

YOU DO NOT NEED TO RESEND YOUR MESSAGE.

Delivery to the following recipient has been delayed:

     bob@example.net

Message will be retried for 2 more day(s)
`),
    recipients: [{ address: 'bob@example.net', action: 'delayed', permanent: false, suppress: false }],
  },
  {
    says: 'a gateway that "could not deliver" but will keep trying for days sent a delay',
    raw: mail(`
From: AntiVirus_for_SMTP_Gateways@example.org
To: bounces+tok@mail.example.com
Subject: Delivery failure notification

Your message with Subject: Your order
could not be delivered to the following recipients:

bob@example.org

Please do not resend your original message.

Delivery attempts will continue to be made for 5  day(s).
`),
    recipients: [{ address: 'bob@example.org', action: 'delayed', suppress: false }],
  },
  {
    says: 'an advisory that delivery was postponed for a full mailbox is a delay',
    raw: mail(`
From: <Postmaster@example.org>
To: <bounces+tok@mail.example.com>
Subject: Mail Delivery Warning

This is an advisory-only email.  Please do not reply to it.

Delivery of email to this address

"bob@example.org"

has been postponed due to a full mailbox.

We will continue to try to deliver your message over the next few days.
`),
    recipients: [{ address: 'bob@example.org', action: 'delayed', suppress: false }],
  },
  {
    says: 'GroupWise naming the recipient by its local part alone is a bounce for the original recipient with that local part',
    raw: mail(`
From: Mailer-Daemon@gw.example.org
To: bounces+tok@mail.example.com
Subject: Message status - undeliverable
X-Mailer: Novell GroupWise Internet Agent 6.5.7
Content-Type: multipart/mixed; boundary=b

--b
Content-Type: text/plain

The message that you sent was undeliverable to the following:

	bob (User not found)

--b
Content-Type: text/rfc822-headers

From: shop@example.com
To: Bob <bob@example.org>
Subject: Your order
--b--
`),
    recipients: [{ address: 'bob@example.org', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: "Sina's report in Chinese is a bounce, for each address it lists",
    raw: mail(`
From: MAILER-DAEMON@sina.example
To: bounces+tok@mail.example.com
Subject: =?utf-8?B?6YKu5Lu25Lyg6L6T5aSx6LSl77yB?=
Content-Type: text/plain; charset=utf-8

sina.example.
邮件无法发送到您指定的地址中。

<bob@sina.example>:

<jane@sina.example>:

--- 附件中的内容是原信件的一份拷贝
`),
    recipients: [{ address: 'bob@sina.example' }, { address: 'jane@sina.example' }],
  },
  {
    says: "hMailServer's plain-text report is a bounce",
    raw: mail(`
From: <mailer-daemon@mail.example.org>
To: <bounces+tok@mail.example.com>
Subject: Undeliverable: Your order

Your message did not reach some or all of the intended recipients.

The following recipient(s) could not be reached:

bob@example.net
   Error Type: SMTP
   Remote server replied: 550 5.1.1 <bob@example.net>... User unknown
`),
    recipients: [{ address: 'bob@example.net', status: '5.1.1', replyCode: 550, suppress: true }],
  },
]);

// ---- The original recipient beside the failed one.
check([
  {
    says: "a report's Original-Recipient is given beside the final recipient, which is the one suppressed",
    raw: report('Delivery has failed.', 'Final-Recipient: rfc822; bob.smith@example.net\nOriginal-Recipient: rfc822;bob@example.org\nAction: failed\nStatus: 5.1.1'),
    recipients: [{ address: 'bob.smith@example.net', originalRecipient: 'bob@example.org', suppress: true }],
  },
  {
    says: 'a report without Original-Recipient gives none',
    raw: report('Delivery has failed.', 'Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: 5.1.1'),
    recipients: [{ address: 'bob@example.net', originalRecipient: null }],
  },
  {
    says: 'Postfix\'s "(expanded from <alias>)" is the original recipient, not a second failed one',
    raw: mail(`
From: MAILER-DAEMON@mx.example.org (Mail Delivery System)
To: bounces+tok@mail.example.com
Subject: Undelivered Mail Returned to Sender

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

<bob@example.net> (expanded from
    <info@example.org>): host mx.example.net[192.0.2.7] said: 550 5.1.1
    <bob@example.net>: Recipient address rejected: User unknown (in reply to RCPT TO command)
`),
    recipients: [{ address: 'bob@example.net', originalRecipient: 'info@example.org', suppress: true }],
  },
  {
    says: 'Exim\'s "(ultimately generated from ...)" is the original recipient of the address in X-Failed-Recipients',
    raw: mail(`
From: Mail Delivery System <Mailer-Daemon@mx.example.org>
To: bounces+tok@mail.example.com
Subject: Mail delivery failed
X-Failed-Recipients: bob@example.net

A message that you sent could not be delivered to one or more of its
recipients. This is a permanent error. The following address(es) failed:

  bob@example.net
    (ultimately generated from info@example.org)
    550 5.1.1 No such user
`),
    recipients: [{ address: 'bob@example.net', originalRecipient: 'info@example.org', suppress: true }],
  },
]);
