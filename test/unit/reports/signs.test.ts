import { check, mail, report } from '../../helpers/report-patterns.js';

// What is a bounce: challenge-response requests and delay warnings are not failures; the
// plain-text bounces of many mail systems are. The pattern tables' helpers, and what the tables
// are for: test/helpers/report-patterns.ts.

// ---- Challenge-response requests and delay warnings are not failures; plain-text bounces are.
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
