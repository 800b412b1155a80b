import t from 'tap';
import { type Base64, inboundView, viewJson } from '../../../src/inbound/view.js';
import type { InboundRow } from '../../../src/store/model.js';

const row = (raw: Buffer): InboundRow => ({
  id: 'in_x',
  customer_id: 1,
  mail_from: 'a@sender.test',
  rcpt_to: '["s@in.example.com"]',
  remote_ip: '127.0.0.1',
  helo: 'h',
  raw,
  size: raw.length,
  from_header: 'A <a@sender.test>',
  subject: 'stored subject',
  message_id: '<m@x>',
  attachments: 0,
  auth: '{"spf":"none"}',
  created_at: 0,
});

const message = Buffer.from(
  'From: A <a@sender.test>\r\nTo: s@in.example.com\r\nSubject: hello\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n' +
    '--b\r\nContent-Type: text/html\r\n\r\n<p>hi <img src="cid:logo"></p>\r\n' +
    `--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="a b.bin"\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.alloc(100_001, 9).toString('base64').replace(/.{76}/g, '$&\r\n')}\r\n` +
    '--b\r\nContent-Type: image/png\r\nContent-ID: <logo>\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--b--\r\n',
);

t.test("a message is shown parsed, with cid: links kept and each attachment's content_id", async (t) => {
  const v = await inboundView(row(message));
  t.equal(v.parsed, true);
  t.equal(v.subject, 'hello');
  t.match(v.html, /cid:logo/, 'the inline image stays a cid: link, not a data: URI');
  const attachments = v.attachments as Array<{
    filename: string | null;
    content_id: string | null;
    size: number;
    content: Base64;
  }>;
  t.same(
    attachments.map((a) => [a.filename, a.content_id, a.size]),
    [
      ['a b.bin', null, 100_001],
      [null, '<logo>', 8],
    ],
  );
  t.ok(attachments[0]!.content.bytes.equals(Buffer.alloc(100_001, 9)));
});

t.test('the streamed JSON is exactly JSON.stringify of the view', async (t) => {
  const v = await inboundView(row(message));
  let text = '';
  for await (const piece of viewJson(v)) text += String(piece);
  t.equal(text, JSON.stringify(v));
  const parsed = JSON.parse(text) as { attachments: Array<{ content: string }> };
  t.equal(parsed.attachments[0]!.content, Buffer.alloc(100_001, 9).toString('base64'));
});

t.test('a stored message the parser cannot read is shown from its top-level headers, never an error', async (t) => {
  const raw = Buffer.from(
    `From: A <a@sender.test>\r\nSubject: huge\r\nX-Huge: ${'h'.repeat(2 * 1024 * 1024)}\r\n\r\nbody\r\n`,
  );
  const v = await inboundView(row(raw));
  t.equal(v.parsed, false);
  t.match(v.parse_error, /header section larger than 1 MiB/);
  t.equal(v.subject, 'stored subject', 'the fields read at receipt');
  t.same(
    (v.headers as Array<{ name: string }>).map((h) => h.name),
    ['from', 'subject', 'x-huge'],
  );
  t.ok((v.headers as Array<{ value: string }>)[2]!.value.length <= 998, 'header values cut to a line');
  t.same([v.text, v.html, v.attachments], [null, null, []]);
});
