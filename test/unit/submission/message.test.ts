import t from 'tap';
import { type Refusal, readSubmitted, type Submitted } from '../../../src/submission/message.js';

// What a submitted message's header section says, and what the stored message becomes: the
// client's bytes less Bcc, Return-Path and X-Posthaste-*, with posthaste's fields added.

const lines = (...l: string[]) => Buffer.from(l.join('\r\n'));
/** The message in chunks of `size` bytes, as DATA may bring it. */
const chunked = (b: Buffer, size = b.length) =>
  Array.from({ length: Math.ceil(b.length / size) }, (_, i) => b.subarray(i * size, (i + 1) * size));
const read = (b: Buffer, size?: number) => readSubmitted(chunked(b, size), b.length);
const ok = (r: Submitted | Refusal): Submitted => {
  if ('code' in r) throw new Error(`refused: ${r.code} ${r.text}`);
  return r;
};

const message = lines(
  'Received: from app.internal by relay.internal; Tue, 24 Nov 2026 09:00:00 +0000',
  'From: =?UTF-8?Q?Caf=C3=A9?= <Orders@Shop.Example.com>',
  'To: Bob <bob@example.net>, carol@example.org',
  'Cc: "Dan, D." <dan@example.org>',
  'Bcc: eve@example.org',
  'Return-Path: <app@relay.internal>',
  'Subject: =?UTF-8?B?w5xiZXJzaWNodA==?= 2026',
  'X-Posthaste-Tag: welcome',
  'x-posthaste-tag: =?UTF-8?Q?d=C3=A9j=C3=A0?=',
  'X-Posthaste-Metadata-Order: 1042',
  'X-Posthaste-Metadata-customer_ref:',
  '  folded value',
  'DKIM-Signature: v=1; d=shop.example.com; s=app;',
  '\tb=abc',
  'X-Mailer: Django',
  '',
  'Body line one',
  '.leading dot',
  'Bcc: not a header, in the body',
  '',
);

t.test('the sender, subject, labels and the recipients the fields name', async (t) => {
  for (const size of [message.length, 7, 1]) {
    const r = ok(read(message, size));
    t.same(
      r.from,
      { address: 'Orders@shop.example.com', local: 'Orders', domain: 'shop.example.com', name: 'Café' },
      `chunks of ${size}: the one From mailbox, its domain lower-case, its name decoded`,
    );
    t.equal(r.fromHeader, 'Café <Orders@shop.example.com>');
    t.equal(r.subject, 'Übersicht 2026');
    t.same(r.tags, ['welcome', 'déjà']);
    t.same({ ...r.metadata }, { Order: '1042', customer_ref: 'folded value' });
    t.same([...r.to], ['bob@example.net', 'carol@example.org']);
    t.same([...r.cc], ['dan@example.org'], 'a quoted comma does not split a mailbox');
    t.equal(r.hasMessageId, false);
    t.equal(r.hasDate, false);
  }
});

t.test(
  'the stored message: Bcc, Return-Path and ours taken out, the rest byte for byte, posthaste fields around them',
  async (t) => {
    const r = ok(read(message, 5));
    const built = r.build('Received: by posthaste\r\n', 'Message-ID: <x@shop.example.com>\r\n').toString('latin1');
    t.equal(
      built,
      lines(
        'Received: by posthaste',
        'Received: from app.internal by relay.internal; Tue, 24 Nov 2026 09:00:00 +0000',
        'From: =?UTF-8?Q?Caf=C3=A9?= <Orders@Shop.Example.com>',
        'To: Bob <bob@example.net>, carol@example.org',
        'Cc: "Dan, D." <dan@example.org>',
        'Subject: =?UTF-8?B?w5xiZXJzaWNodA==?= 2026',
        'DKIM-Signature: v=1; d=shop.example.com; s=app;',
        '\tb=abc',
        'X-Mailer: Django',
        'Message-ID: <x@shop.example.com>',
        '',
        'Body line one',
        '.leading dot',
        'Bcc: not a header, in the body',
        '',
      ).toString('latin1'),
    );
  },
);

t.test('a Message-ID and a Date the client wrote are seen; 8-bit header text is read as UTF-8', async (t) => {
  const r = ok(
    read(
      Buffer.from(
        'From: Zoë <a@b.example>\r\nMessage-Id: <1@app>\r\nDATE: Tue, 24 Nov 2026 09:00:00 +0000\r\nSubject: Grüße\r\n\r\nx\r\n',
        'utf8',
      ),
    ),
  );
  t.equal(r.hasMessageId, true);
  t.equal(r.hasDate, true);
  t.equal(r.subject, 'Grüße');
  t.equal(r.fromHeader, 'Zoë <a@b.example>');
});

t.test('a message without a body, and one whose header section ends at a line that is not a field', async (t) => {
  const headOnly = ok(read(lines('From: a@b.example', 'Subject: only headers', '')));
  t.equal(
    headOnly.build('R: 1\r\n', 'D: 2\r\n').toString(),
    'R: 1\r\nFrom: a@b.example\r\nSubject: only headers\r\nD: 2\r\n',
  );
  const odd = ok(read(lines('From: a@b.example', 'this is not a field', 'Bcc: x@y.example', '')));
  t.equal(
    odd.build('', 'D: 2\r\n').toString(),
    'From: a@b.example\r\nD: 2\r\nthis is not a field\r\nBcc: x@y.example\r\n',
    'what follows is body, kept as written',
  );
});

t.test('refusals: the From field, our own fields, the limits', async (t) => {
  const refused = (b: Buffer) => {
    const r = read(b);
    return 'code' in r ? `${r.code} ${r.text}` : 'accepted';
  };
  t.match(refused(lines('Subject: x', '', 'b')), /^550 5\.7\.1 The message has no From field/);
  t.match(
    refused(lines('From: a@b.example', 'From: c@d.example', '', 'b')),
    /^550 5\.7\.1 The message has 2 From fields/,
  );
  t.match(refused(lines('From: a@b.example, c@d.example', '', 'b')), /^550 5\.7\.1 The From field names 2 addresses/);
  t.match(refused(lines('From: undisclosed-recipients:;', '', 'b')), /^550 5\.7\.1 The From address cannot be read/);
  t.match(
    refused(lines('From: a@[127.0.0.1]', '', 'b')),
    /^550 5\.7\.1 The From address cannot be read: address literals/,
  );
  t.equal(refused(lines('From: a@b.example (Shop)', '', 'b')), 'accepted', 'a comment after the address');
  t.match(
    refused(lines('From: a@b.example', 'X-Posthaste-Tags: typo', '', 'b')),
    /^554 5\.6\.0 X-Posthaste-Tags is not a field posthaste knows/,
  );
  t.match(
    refused(lines('From: a@b.example', 'X-Posthaste-Tag: ', '', 'b')),
    /^554 5\.6\.0 X-Posthaste-Tag: a tag is 1 to 100/,
  );
  t.match(
    refused(lines('From: a@b.example', ...Array.from({ length: 11 }, (_, i) => `X-Posthaste-Tag: t${i}`), '', 'b')),
    /^554 5\.6\.0 The message has 11 tags; at most 10/,
  );
  t.match(
    refused(lines('From: a@b.example', 'X-Posthaste-Metadata-a: 1', 'X-Posthaste-Metadata-a: 2', '', 'b')),
    /^554 5\.6\.0 X-Posthaste-Metadata-a is given twice/,
  );
  t.match(
    refused(lines('From: a@b.example', `X-Posthaste-Metadata-a: ${'v'.repeat(1025)}`, '', 'b')),
    /^554 5\.6\.0 .*at most 1024/,
  );
  t.match(
    refused(Buffer.from(`From: a@b.example\r\nX-Long: ${'y'.repeat(1024 * 1024 + 10)}\r\n\r\nb\r\n`)),
    /^554 5\.6\.0 Message refused: its header section is larger than 1 MiB/,
  );
});

t.test(
  'X-Posthaste-Unsubscribe: yes asks for the List-Unsubscribe fields and is removed; a bad value or an own List-Unsubscribe is refused',
  async (t) => {
    const asked = ok(read(lines('From: a@b.example', 'X-Posthaste-Unsubscribe: YES', 'Subject: s', '', 'b')));
    t.equal(asked.unsubscribe, true);
    t.notMatch(asked.build('', '').toString(), /X-Posthaste/i, 'removed from the stored message');
    t.equal(ok(read(lines('From: a@b.example', 'X-Posthaste-Unsubscribe: no', '', 'b'))).unsubscribe, false);
    t.equal(ok(read(lines('From: a@b.example', '', 'b'))).unsubscribe, false);
    const refusal = (b: Buffer) => {
      const r = read(b);
      return 'code' in r ? `${r.code} ${r.text}` : 'accepted';
    };
    t.match(refusal(lines('From: a@b.example', 'X-Posthaste-Unsubscribe: maybe', '', 'b')), /^554 5\.6\.0 .*yes or no/);
    t.match(
      refusal(
        lines('From: a@b.example', 'List-Unsubscribe: <mailto:x@b.example>', 'X-Posthaste-Unsubscribe: yes', '', 'b'),
      ),
      /^554 5\.6\.0 X-Posthaste-Unsubscribe: yes with the message's own List-Unsubscribe/,
    );
  },
);
