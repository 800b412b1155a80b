import t from 'tap';
import { attachmentAt, readContent } from '../../../src/dashboard/content.js';

// A message's content on its page: a send request read back as delivery reads it, and a message
// submitted over SMTP parsed from the MIME it was stored as.

const mime = Buffer.from(
  [
    'From: Shop <shop@example.com>',
    'To: bob@example.net',
    'Subject: =?UTF-8?Q?Caf=C3=A9?=',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: multipart/alternative; boundary="b2"',
    '',
    '--b2',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    'Grüße,\r\nthe shop',
    '--b2',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>Grüße</p>',
    '--b2--',
    '--b1',
    'Content-Type: application/pdf; name="invoice.pdf"',
    'Content-Disposition: attachment; filename="invoice.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 not really').toString('base64'),
    '--b1--',
    '',
  ].join('\r\n'),
);

t.test(
  'a submitted message: its text, HTML and attachments as a mail client reads them; the source is the message as stored',
  async (t) => {
    const c = await readContent({ request: mime, format: 'mime', composed: null });
    t.match(c, {
      kind: 'stored',
      text: 'Grüße,\nthe shop',
      html: /<p>Grüße<\/p>/,
      attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', size: 19 }],
      unreadable: undefined,
    });
    t.same(c.kind === 'stored' && c.source, { kind: 'submitted', bytes: mime });
    const a = await attachmentAt({ request: mime, format: 'mime', composed: null }, 0);
    t.same(a?.bytes, Buffer.from('%PDF-1.4 not really'));
    t.equal(
      await attachmentAt({ request: mime, format: 'mime', composed: null }, 1),
      undefined,
      'no second attachment',
    );
  },
);

t.test('a send request is read back as before, and a purged body says so', async (t) => {
  const request = Buffer.from(
    JSON.stringify({ from: 'shop@example.com', to: 'bob@example.net', subject: 's', text_body: 'Hi' }),
  );
  t.match(await readContent({ request, format: 'json', composed: null }), {
    kind: 'stored',
    text: 'Hi',
    source: { kind: 'request' },
  });
  t.same(await readContent({ request: null, format: 'mime', composed: null }), { kind: 'purged' });
});

t.test('a submitted message past the MIME limits shows only its source, and why', async (t) => {
  const bomb = Buffer.from(
    `Content-Type: multipart/mixed; boundary=x\r\n\r\n${'--x\r\nContent-Type: text/plain\r\n\r\na\r\n'.repeat(1100)}--x--\r\n`,
  );
  t.match(await readContent({ request: bomb, format: 'mime', composed: null }), {
    kind: 'stored',
    unreadable: /more than 1000 MIME parts/,
    source: { kind: 'submitted' },
  });
});
