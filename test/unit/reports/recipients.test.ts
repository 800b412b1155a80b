import { check, mail, report } from '../../helpers/report-patterns.js';

// Which addresses a bounce says failed: never the sending side, without decorations, not the
// addresses of help text, and the original recipient beside the failed one. The pattern tables'
// helpers, and what the tables are for: test/helpers/report-patterns.ts.

// ---- The failed recipient, never the sending side.
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

// ---- Addresses without their decorations.
check([
  {
    says: 'an Exchange type prefix in Final-Recipient ("SMTP:bob@example.net") is not part of the address',
    raw: report(
      'Delivery has failed to these recipients.',
      'Final-Recipient: rfc822;SMTP:bob@example.net\nAction: failed\nStatus: 5.1.1',
    ),
    recipients: [{ address: 'bob@example.net', suppress: true }],
  },
  {
    says: "Exchange's IMCEA encapsulation of an Internet address is undone",
    raw: report(
      'Delivery has failed to these recipients.',
      'Final-Recipient: rfc822;IMCEASMTP-bob+40example+2Enet@exchange.example.org\nAction: failed\nStatus: 5.1.1',
    ),
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

// ---- Addresses of a postmaster's explanation are not failed recipients.
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

// ---- The original recipient beside the failed one.
check([
  {
    says: "a report's Original-Recipient is given beside the final recipient, which is the one suppressed",
    raw: report(
      'Delivery has failed.',
      'Final-Recipient: rfc822; bob.smith@example.net\nOriginal-Recipient: rfc822;bob@example.org\nAction: failed\nStatus: 5.1.1',
    ),
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
