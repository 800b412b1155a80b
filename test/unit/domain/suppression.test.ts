import t from 'tap';
import { classifyReply, parseReply } from '../../../src/domain/classify.js';
import { DEFAULT_SUPPRESSION, type FailureFacts, suppresses, suppressFor } from '../../../src/domain/outcome.js';

/** The facts of a permanent failure from a real-shaped reply and the command it answered. */
const facts = (reply: string, stage: FailureFacts['stage']): FailureFacts => {
  const r = parseReply(reply);
  return { classification: classifyReply(r), status: r.enhanced_code || null, stage, text: reply };
};

t.test(
  "the address is suppressed when it does not exist, never for causes on the sender's side or temporary ones",
  async (t) => {
    const table: Array<[string, FailureFacts['stage'], boolean]> = [
      ['550 5.1.1 <bob@example.net>: Recipient address rejected: User unknown in virtual mailbox table', 'rcpt', true],
      ["554 delivery error: dd This user doesn't have a yahoo.com account (frank@yahoo.com) [0]", 'data', true],
      ['556 5.1.10 Recipient address has null MX', null, true],
      ['550 5.1.2 Host unknown', null, true],
      // The bare words after DATA: a content filter's (NTT docomo, KDDI).
      ['550 Unknown user kijitora@docomo.ne.jp', 'data', false],
      ['550 : User unknown', 'data', false],
      ['550 Unknown user kijitora@docomo.ne.jp', 'rcpt', true],
      ['550 5.1.1 <a@b.example>... User unknown', 'data', true],
      // Refused at MAIL FROM: the sender, whatever the words.
      ['553 5.1.0 neko.example.com does not exist', 'mail', false],
      ['554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org', 'rcpt', false],
      ["550 5.7.26 Unauthenticated email from example.com is not accepted due to domain's DMARC policy", 'data', false],
      ['550 5.7.1 Relaying denied', 'rcpt', false],
      ['552 5.2.2 Mailbox full', 'rcpt', false],
      ['550 5.2.1 The email account that you tried to reach is disabled.', 'rcpt', false],
      [
        '550 5.7.1 <a@b>: Recipient address rejected: User a@b temporary locked. Please try again later!',
        'rcpt',
        false,
      ],
      ['Name service error for domain example.com: Host not found, try again', null, false],
      // A resolver that did not answer says nothing of whether the domain exists.
      ['Unrouteable address: host lookup did not complete', null, false],
      ['554 5.4.4 DNS lookup timed out for example.net', null, false],
      ['550 5.1.2 Host unknown (Name server timeout for example.net)', null, false],
      ['554 5.4.6 Mail loop detected', null, false],
      ['550 5.0.0 Something went wrong', 'rcpt', false],
    ];
    for (const [reply, stage, expected] of table)
      t.equal(suppressFor(facts(reply, stage)), expected, `${stage ?? '-'}: ${reply.slice(0, 80)}`);
  },
);

t.test('a full mailbox and a disabled account suppress only when the settings say so', async (t) => {
  t.notOk(suppresses('mailbox_full') || suppresses('mailbox_disabled'), 'not by default');
  t.ok(suppresses('mailbox_full', { ...DEFAULT_SUPPRESSION, mailboxFull: true }));
  t.ok(suppresses('mailbox_disabled', { ...DEFAULT_SUPPRESSION, disabled: true }));
  t.ok(
    suppressFor(facts('550 5.2.1 The email account that you tried to reach is disabled.', 'rcpt'), {
      mailboxFull: false,
      disabled: true,
    }),
  );
});
