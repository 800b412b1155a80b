import t from 'tap';
import { readReport } from '../../../src/reports/read.js';
import { check, mail, report } from '../../helpers/report-patterns.js';

// Which words decide when a bounce says two things, and the shapes a bounce loses on the way (a
// Content-Type, a domain, everything but one sentence). The pattern tables' helpers, and what the
// tables are for: test/helpers/report-patterns.ts. Each case has a fixture beside it in
// test/fixtures/dsn/ read whole by parsers.test.ts.

// ---- A sentence saying the mailbox does not exist outweighs a policy status (x.7.x).
check([
  {
    says: 'a 5.7.1 reply that says "user unknown" beside "access denied" is an unknown recipient',
    raw: report(
      '<bob@example.net>: host mx.example.net[192.0.2.25] said: 550 5.7.1 User unknown or access denied (in reply to RCPT TO command)',
      'Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: 5.7.1\nDiagnostic-Code: smtp; 550 5.7.1 User unknown or access denied',
    ),
    recipients: [{ address: 'bob@example.net', status: '5.7.1', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: 'Status 5.7.1 with a generic policy reply, and "user unknown" in the text about the recipient, is an unknown recipient',
    raw: report(
      'Delivery to the following recipients failed.\n\n       bob@example.net: user unknown',
      'Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: 5.7.1\nDiagnostic-Code: smtp; 550 5.7.1 Recipient rejected by policy',
    ),
    recipients: [{ address: 'bob@example.net', classification: 'unknown_recipient', suppress: true }],
  },
  {
    says: "a 5.7.1 refusal of the sender that names no such user stays the sender's: nothing suppressed",
    raw: report(
      '<bob@example.net>: host mx.example.net[192.0.2.25] said: 550 5.7.1 <shop@example.com>: Sender address rejected: no such user (in reply to RCPT TO command)',
      'Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: 5.7.1\nDiagnostic-Code: smtp; 550 5.7.1 <shop@example.com>: Sender address rejected: no such user',
    ),
    recipients: [{ address: 'bob@example.net', classification: 'policy', suppress: false }],
  },
]);

// ---- A host or domain that does not exist, in the resolvers' own words.
const POSTFIX_NXDOMAIN =
  'Host or domain name not found. Name service error for name=example.invalid type=A: Host not found';
check([
  {
    says: "Postfix's resolver wording under 5.4.4 is a host not found, and suppresses",
    raw: report(
      `<bob@example.invalid>: ${POSTFIX_NXDOMAIN}`,
      `Final-Recipient: rfc822; bob@example.invalid\nAction: failed\nStatus: 5.4.4\nDiagnostic-Code: X-Postfix; ${POSTFIX_NXDOMAIN}`,
    ),
    recipients: [{ address: 'bob@example.invalid', classification: 'dns_failure', suppress: true }],
  },
  {
    says: "Postfix's resolver wording in a plain-text bounce, wrapped, is a host not found",
    raw: mail(`
From: MAILER-DAEMON@mx.example.org (Mail Delivery System)
To: bounces+tok@mail.example.com
Subject: Undelivered Mail Returned to Sender

This is the Postfix program at host mx.example.org.

I'm sorry to have to inform you that the message returned
below could not be delivered to one or more destinations.

<bob@mail.example.invalid> (expanded from <bob@example.invalid>): Host or
    domain name not found. Name service error for name=mail.example.invalid
    type=A: Host not found
`),
    recipients: [{ address: 'bob@mail.example.invalid', classification: 'dns_failure', suppress: true }],
  },
  {
    says: 'Exim\'s "all host address lookups failed permanently" is a host not found',
    raw: report(
      'The following address(es) failed:\n\n  bob@example.invalid\n    all host address lookups failed permanently',
      'Final-Recipient: rfc822; bob@example.invalid\nAction: failed\nStatus: 5.0.0',
    ),
    recipients: [{ address: 'bob@example.invalid', classification: 'dns_failure', suppress: true }],
  },
]);

// ---- A malformed reply from the resolver is temporary, whatever the status around it.
const malformed = (status: string, words: string) =>
  report(
    `<bob@example.net>: Name service error for name=example.net type=MX: ${words}`,
    `Final-Recipient: rfc822; bob@example.net\nAction: failed\nStatus: ${status}\nDiagnostic-Code: X-Postfix; Name service error for name=example.net type=MX: ${words}`,
  );
check(
  ['5.0.0', '5.4.4'].flatMap((status) =>
    ['Malformed or unexpected name server reply', 'Malformed name server reply'].map((words) => ({
      says: `"${words}" under ${status} is a DNS failure that suppresses nothing`,
      raw: malformed(status, words),
      recipients: [{ address: 'bob@example.net', status, classification: 'dns_failure' as const, suppress: false }],
    })),
  ),
);

// ---- A notice whose Content-Type was lost: read as the multipart it is; its preamble is never the diagnostic.
t.test('a Postfix notice without its Content-Type gives the reason of its report, not its preamble', async (t) => {
  const r = readReport(
    mail(`
From: MAILER-DAEMON@mx.example.org (Mail Delivery System)
To: bounces+tok@mail.example.com
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0

This is a multi-part message in MIME format.

--9C1D2E3F4A.1732183200/mx.example.org
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

<bob@example.net>: mailbox full

--9C1D2E3F4A.1732183200/mx.example.org
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org

Final-Recipient: rfc822; bob@example.net
Action: failed
Status: 5.2.2

--9C1D2E3F4A.1732183200/mx.example.org--
`),
  );
  t.same(
    r.recipients.map((x) => [x.address, x.status, x.classification, x.diagnostic]),
    [['bob@example.net', '5.2.2', 'mailbox_full', '<bob@example.net>: mailbox full']],
  );
});

t.test('a MIME preamble left in a plain-text bounce is not its diagnostic', async (t) => {
  const r = readReport(
    mail(`
From: MAILER-DAEMON@mx.example.org
To: bounces+tok@mail.example.com
Subject: Returned mail: see transcript for details

This is a MIME-encapsulated message

The following addresses had permanent fatal errors:
<bob@example.net>
`),
  );
  t.equal(r.kind, 'dsn');
  t.notMatch(r.recipients[0]?.diagnostic ?? '', /MIME/);
});

// ---- A local part alone is completed with the original recipient's domain, not the reporting host's.
check([
  {
    says: 'Final-Recipient "rfc822; alice" is kept, with its status, at the domain of the original\'s recipient',
    raw: report(
      'Your message could not be delivered to one or more recipients.',
      'Final-Recipient: rfc822; alice\nAction: failed\nStatus: 5.2.2\nDiagnostic-Code: smtp; 552 5.2.2 Mailbox full',
      'From: shop@example.com\nTo: Sales <sales@example.net>\nSubject: Your order\n',
    ),
    recipients: [{ address: 'alice@example.net', status: '5.2.2', classification: 'mailbox_full' }],
  },
  {
    says: "Sendmail's local user under its heading is at the domain of the original's recipient",
    raw: mail(`
From: Mail Delivery Subsystem <MAILER-DAEMON@mx.example.org>
To: bounces+tok@mail.example.com
Subject: Returned mail: see transcript for details

   ----- The following addresses had permanent fatal errors -----
<alice>
    (reason: 550 5.1.1 User unknown)

   ----- Original message follows -----

From: Shop <shop@example.com>
To: Sales <sales@example.net>
Subject: Your order
`),
    recipients: [{ address: 'alice@example.net', status: '5.1.1', classification: 'unknown_recipient' }],
  },
]);

// ---- A refusal in one sentence from a mailer-daemon is a bounce, judged as such refusals are.
const refusal = (from: string, body: string, more = 'Auto-Submitted: auto-replied\n') =>
  mail(`
From: ${from}
To: bounces+tok@mail.example.com
Subject: Your order
${more}
${body}
`);
check([
  {
    says: 'a one-line "Message rejected: spam detected" from MAILER-DAEMON is a spam refusal, suppressing nothing',
    raw: refusal('MAILER-DAEMON@mx.example.org', 'Message rejected: spam detected'),
    recipients: [{ address: '', classification: 'spam_block', permanent: true, suppress: false }],
  },
  {
    says: 'the same sentence from a person, without Auto-Submitted, is not a bounce',
    raw: refusal('Bob <bob@example.net>', "Your message was rejected by the recipient's filter.", ''),
    recipients: 'none',
  },
  {
    says: 'a one-line auto-reply from the null sender that refuses nothing is not a bounce',
    raw: refusal('<>', 'Thank you for your message, we will answer within two days.'),
    recipients: 'none',
  },
]);
