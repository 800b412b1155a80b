import net from 'node:net';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { cpuOf, spawnDaemon } from '../../support/daemon-process.js';
import { quiet } from '../../support/wait.js';
import { customerId, makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import { expectError, request } from '../helpers/http.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { testSql } from '../helpers/sql.js';

// The limits bad input meets, each at the edge where it used to fail: header text with control
// characters or lines that cannot be folded, JSON that is not UTF-8, clients that abort their
// bodies, and received mail the API could not show. Against the daemon as a process, as systemd
// runs it, with its log and metrics.
const dir = tempDir();
t.teardown(dir.remove);
const configPath = writeTestConfig(
  dir.path,
  '[inbound]\nrate_per_minute = 0\n[metrics]\nenabled = true\nlisten = ""\n',
  undefined,
  'max_message_bytes = 4000000\n',
);
const config = loadConfig({ path: configPath, env: {} });
const store = await openTestStore(config);
t.teardown(() => store.admin.close());
const key = await makeKey(store, 'production');
await makeDomain(store, 'example.com');
const receiving = await store.domains.add({
  customerId: await customerId(store),
  name: 'in.example.com',
  receiving: true,
  now: Date.now(),
});

const d = await spawnDaemon(configPath);
t.teardown(() => {
  if (d.child.exitCode === null) d.child.kill('SIGKILL');
});

const valid = { from: 'Shop <a@example.com>', to: 'r@example.org', subject: 'Hello', text_body: 'Hi' };
const send = (body: unknown) => request(`${d.apiUrl}/api/v1/emails`, { key, body });
const sql = testSql(config);
t.teardown(() => sql.close());
const count = (table: string) => sql.value(`SELECT COUNT(*) FROM ${table}`);
const errorLines = () =>
  d
    .output()
    .split('\n')
    .filter((l) => l.includes('"level":50'));

t.test(
  'control characters other than tab are refused in every header field, VT and FF included, and nothing is queued',
  async (t) => {
    const before = await count('messages');
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['VT in the subject', { subject: 'Your\x0border' }, 'subject'],
      ['FF in the subject', { subject: 'Your\x0corder' }, 'subject'],
      ['NEL in the subject', { subject: 'Your\x85order' }, 'subject'],
      ['VT in a custom header value', { headers: { 'X-Tag': 'a\x0bBcc: x@evil.example' } }, 'headers.X-Tag'],
      ['FF in a custom header value', { headers: { 'X-Tag': 'a\x0cb' } }, 'headers.X-Tag'],
      ['VT in a display name', { to: '"Bob\x0bBcc: x@evil.example" <b@example.org>' }, 'to'],
      ["FF in the sender's display name", { from: 'Shop\x0c <a@example.com>' }, 'from'],
      ['ESC in a reply-to name', { reply_to: 'Help\x1b <h@example.com>' }, 'reply_to'],
      [
        'VT in an attachment name',
        { attachments: [{ filename: 'a\x0b.txt', io: 'AA==', content_type: 'text/plain' }] },
        'attachments[0].filename',
      ],
    ];
    for (const [name, extra, field] of cases) {
      const r = await send({ ...valid, ...extra });
      expectError(t, r, 422, 'validation_failed', name);
      t.match(JSON.stringify(r.body.error.details[field]), /control character/, `${name}: details.${field}`);
    }
    t.equal(await count('messages'), before, 'nothing queued');
    const tab = await send({
      ...valid,
      subject: 'Tab\there',
      headers: { 'X-Tag': 'a\tb' },
      to: '"Bob\tSmith" <b@example.org>',
    });
    t.equal(tab.status, 202, 'tab is header text (RFC 5322 WSP)');
  },
);

t.test('custom header values are bounded and must fold into lines of at most 998 characters', async (t) => {
  const before = await count('messages');
  const huge = await send({ ...valid, headers: { 'X-Huge': 'a'.repeat(1024 * 1024) } });
  expectError(t, huge, 422, 'validation_failed', 'a 1 MiB value');
  t.match(huge.body.error.details['headers.X-Huge'], [/at most 8192 characters/]);
  const word = await send({ ...valid, headers: { 'X-Word': 'a'.repeat(1000) } });
  expectError(t, word, 422, 'validation_failed', 'a 1,000-character word');
  t.match(word.body.error.details['headers.X-Word'], [/998/]);
  const subject = await send({ ...valid, subject: 'a'.repeat(990) });
  expectError(t, subject, 422, 'validation_failed', 'a subject of one 990-character word');
  t.equal(await count('messages'), before, 'nothing queued');
  t.equal(
    (await send({ ...valid, headers: { 'X-Words': 'word '.repeat(1600).trim() } })).status,
    202,
    '8,000 characters that fold at spaces',
  );
});

t.test('JSON that is not UTF-8 is refused with the byte offset, not repaired with U+FFFD', async (t) => {
  const before = await count('messages');
  const cases: Array<[string, Buffer, number]> = [
    ['0xFF', Buffer.from([0xff]), 0],
    ['a lone continuation byte', Buffer.from([0x80]), 0],
    ['an overlong NUL', Buffer.from([0xc0, 0x80]), 0],
    ['a UTF-16 surrogate', Buffer.from([0xed, 0xa0, 0x80]), 0],
    ['a character cut short', Buffer.from([0xe2, 0x82]), 0],
  ];
  for (const [name, bad, within] of cases) {
    const prefix = Buffer.from('{"from":"a@example.com","to":"r@example.org","subject":"Caf');
    const body = Buffer.concat([prefix, bad, Buffer.from('","text_body":"x"}')]);
    const res = await fetch(`${d.apiUrl}/api/v1/emails`, {
      method: 'POST',
      headers: { authorization: `Token ${key}`, 'content-type': 'application/json' },
      body,
    });
    const json = (await res.json()) as { error: { code: string; message: string } };
    t.equal(res.status, 400, name);
    t.equal(json.error.code, 'invalid_json');
    t.match(json.error.message, `byte offset ${prefix.length + within}`, `${name}: the offset named`);
  }
  t.equal(await count('messages'), before, 'nothing queued');
  const ok = await send({ ...valid, subject: 'Café ☃ 😀' });
  t.equal(ok.status, 202, 'well-formed UTF-8, 4-byte characters included');
});

/** Sends the head of a request announcing a larger body, a little of it, then disconnects. */
function abort(path: string, auth: boolean): Promise<void> {
  return new Promise((resolve) => {
    const s = net.connect(new URL(d.apiUrl).port as unknown as number, '127.0.0.1', () => {
      s.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth ? `Authorization: Token ${key}\r\n` : ''}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"from":"a@`,
      );
      setTimeout(() => {
        s.destroy();
        resolve();
      }, 100);
    });
    s.on('error', () => resolve());
  });
}

t.test(
  'a client that aborts its request body is counted, never logged as an error, and cannot make the server read a body for a route that does not exist',
  async (t) => {
    const errorsBefore = errorLines().length;
    for (let i = 0; i < 10; i++) {
      await abort('/api/v1/emails', true);
      await abort('/api/v1/webhooks', true);
      await abort('/nowhere', false);
      await abort('/healthz', false);
    }
    await quiet(200); // time for an error line to appear, if one would
    t.equal(errorLines().length, errorsBefore, 'no error line');
    const metrics = await (await fetch(`${d.apiUrl}/metrics`)).text();
    const aborted = Number(/^posthaste_api_client_aborts_total (\d+)/m.exec(metrics)?.[1]);
    t.equal(aborted, 20, 'the 20 aborts of bodies being read are counted');
    t.equal((await fetch(`${d.apiUrl}/healthz`)).status, 200);
  },
);

t.test(
  'received mail past the MIME limits is refused with 554 5.6.0 and nothing is stored; mail within them is stored and shown',
  async (t) => {
    const before = await count('inbound_messages');
    const refused: Array<[string, string]> = [
      ['a 1.5 MiB header line', `Subject: long\r\nX-Long: ${'a'.repeat(1.5 * 1024 * 1024)}\r\n\r\nbody\r\n`],
      [
        '2,000 nested multiparts',
        `Content-Type: multipart/mixed; boundary=b0\r\n\r\n${Array.from({ length: 2000 }, (_, i) => `--b${i}\r\nContent-Type: multipart/mixed; boundary=b${i + 1}\r\n\r\n`).join('')}x\r\n`,
      ],
      [
        '20,000 parts without a Content-Type',
        `Content-Type: multipart/mixed; boundary=q\r\n\r\n${'--q\r\n\r\nx\r\n'.repeat(20_000)}--q--\r\n`,
      ],
      [
        '20,000 parts',
        `Content-Type: multipart/mixed; boundary=q\r\n\r\n${'--q\r\nContent-Type: text/plain\r\n\r\nx\r\n'.repeat(20_000)}--q--\r\n`,
      ],
    ];
    for (const [name, body] of refused) {
      const c = await RawSmtp.connect(d.smtpPort);
      await c.cmd('EHLO client.test');
      const r = await c.send('x@sender.test', ['support@in.example.com'], body);
      c.close();
      t.match(r.data, /^554 5\.6\.0 /, `${name}: ${r.data}`);
    }
    t.equal(await count('inbound_messages'), before, 'nothing stored');
    const within = `From: x@sender.test\r\nSubject: at the limits\r\nX-Big: ${'h'.repeat(900 * 1024)}\r\nContent-Type: multipart/mixed; boundary=q\r\n\r\n${'--q\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=p.bin\r\n\r\nx\r\n'.repeat(990)}--q--\r\n`;
    const c = await RawSmtp.connect(d.smtpPort);
    await c.cmd('EHLO client.test');
    const r = await c.send('x@sender.test', ['support@in.example.com'], within);
    c.close();
    t.match(r.data, /^250 /, '990 parts and a 900 KiB header are accepted');
    const id = /queued as (\S+)/.exec(r.data)![1]!;
    const view = await request(`${d.apiUrl}/api/v1/inbound/${id}`, { key });
    t.equal(view.status, 200);
    t.equal(view.body.parsed, true);
    t.equal(view.body.attachments.length, 990);
    t.equal(view.body.subject, 'at the limits');
  },
);

t.test(
  'a stored message the parser cannot read (kept under other limits) is shown from its headers, with parsed: false, never a 500',
  async (t) => {
    const raw = Buffer.from(
      `From: Old <old@sender.test>\r\nSubject: from an older store\r\nX-Long: ${'a'.repeat(2 * 1024 * 1024)}\r\n\r\nbody\r\n`,
    );
    const [id] = await store.inbound.receive({
      stores: [
        {
          customerId: await customerId(store),
          domainId: receiving.id,
          mailFrom: 'old@sender.test',
          rcptTo: ['support@in.example.com'],
          remoteIp: '127.0.0.1',
          helo: 'h',
          fromHeader: 'Old <old@sender.test>',
          to: [],
          subject: 'from an older store',
          messageId: '',
          attachments: 0,
          auth: { spf: 'none', dkim: 'none', dmarc: 'none' },
        },
      ],
      report: null,
      reports: [],
      raw,
      secret: Buffer.alloc(32),
      now: Date.now(),
    });
    for (let i = 0; i < 3; i++) {
      const view = await request(`${d.apiUrl}/api/v1/inbound/${id}`, { key });
      t.equal(view.status, 200, `attempt ${i + 1}`);
      t.equal(view.body.parsed, false);
      t.match(view.body.parse_error, /header section larger than 1 MiB/);
      t.equal(view.body.subject, 'from an older store');
    }
    const rawRes = await fetch(`${d.apiUrl}/api/v1/inbound/${id}/raw`, { headers: { authorization: `Token ${key}` } });
    t.equal(rawRes.status, 200);
    t.equal(Buffer.from(await rawRes.arrayBuffer()).length, raw.length, '/raw serves it whole');
  },
);

t.test('hostile address lists and bodies get small answers quickly', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['two million commas', { ...valid, to: 'x,'.repeat(2_000_000) }],
    ['a million array entries', { ...valid, to: Array(1_000_000).fill('x') }],
    [
      '200,000 bad headers',
      { ...valid, headers: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`X-${i}`, 'a\nb'])) },
    ],
    ['a 5 MB quoted display name', { ...valid, to: `"${'a'.repeat(5_000_000)}" <a@b.org>` }],
    ['a display name of 30,000 spaces', { ...valid, to: `a${' '.repeat(30_000)}b <a@b.org>` }],
  ];
  for (const [name, body] of cases) {
    // The CPU the daemon spent on it, not the wall clock: a machine busy with other work stretches
    // the one and not the other.
    const started = cpuOf(d.child.pid!);
    const r = await send(body);
    const ms = cpuOf(d.child.pid!) - started;
    t.equal(r.status, 422, name);
    t.ok(JSON.stringify(r.body).length < 64 * 1024, `${name}: an answer of ${JSON.stringify(r.body).length} bytes`);
    t.ok(ms < 3000, `${name}: ${ms} ms of CPU`);
  }
  t.same(errorLines(), [], 'no error logged in this whole file');
});
