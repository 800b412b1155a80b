import net from 'node:net';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { returnToken } from '../../src/domain/return-path.js';
import { RETURN_PATH_SECRET } from '../../src/main.js';
import { readReport } from '../../src/reports/read.js';
import { memoryOf, spawnDaemon } from '../../support/daemon-process.js';
import {
  customerId,
  makeDomain,
  makeKey,
  openTestStore,
  tempDir,
  testStoreUrl,
  writeTestConfig,
} from '../helpers/env.js';
import { RawSmtp } from '../helpers/smtp-client.js';

// Generated in the test (nothing copied): each case must end in a clear error or a clean accept,
// never a crash, a 500 or a hang; the daemon's peak memory must stay under 256 MB.
const dir = tempDir();
t.teardown(dir.remove);
const configPath = writeTestConfig(
  dir.path,
  '[limits]\nmax_message_bytes = 1000000\n[inbound]\nrate_per_minute = 0\n',
  undefined,
  'max_message_bytes = 2000000\n',
  undefined,
  await testStoreUrl(t),
);
const config = loadConfig({ path: configPath, env: {} });
const setup = await openTestStore(config);
const key = await makeKey(setup, 'sandbox');
await makeDomain(setup, 'example.com');
await setup.domains.add({
  customerId: await customerId(setup),
  name: 'in.example.com',
  receiving: true,
  now: Date.now(),
});
const bounceRcpt = `bounces+${returnToken(await setup.admin.secret(RETURN_PATH_SECRET), 1)}@bounces.test.posthaste`;
await setup.admin.close();

const d = await spawnDaemon(configPath, {}, { bare: true }); // its memory is measured
t.teardown(() => {
  if (d.child.exitCode === null) d.child.kill('SIGKILL');
});

let cases = 0;
const peak = () => {
  const m = memoryOf(d.child.pid!);
  return `daemon memory: peak ${m.peak} MB, now ${m.rss} MB`;
};
const valid = { from: 'a@example.com', to: 'r@example.org', subject: 'Hello', text_body: 'Hi' };
const FIELDS = ['from', 'to', 'cc', 'bcc', 'reply_to', 'subject', 'body', 'text_body', 'html_body'];
const ALLOWED = new Set([202, 400, 403, 409, 413, 415, 422]);

async function http(t: Test, name: string, body: string, contentType = 'application/json'): Promise<void> {
  cases++;
  const started = Date.now();
  const res = await fetch(`${d.apiUrl}/api/v1/emails`, {
    method: 'POST',
    headers: { authorization: `Token ${key}`, 'content-type': contentType },
    body,
  });
  const text = await res.text();
  let shaped = false;
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } }).error;
    shaped = typeof e?.code === 'string' && typeof e.message === 'string' && typeof e.details === 'object';
  } catch {
    shaped = false;
  }
  const ok = ALLOWED.has(res.status) && (res.status === 202 || shaped);
  if (!ok) t.fail(`${name}: ${res.status} ${text.slice(0, 200)}`);
  if (Date.now() - started > 5000) t.fail(`${name}: took ${Date.now() - started} ms`);
}

t.test('HTTP API: malformed, huge, nested, injected, mistyped and unknown input', async (t) => {
  const json = JSON.stringify({
    ...valid,
    attachments: [{ filename: 'a.txt', io: 'aGVsbG8=', content_type: 'text/plain' }],
    headers: { 'X-A': 'b' },
    metadata: { k: 'v' },
  });
  for (let i = 1; i < json.length; i += Math.ceil(json.length / 60))
    await http(t, `truncated at ${i}`, json.slice(0, i));
  for (const junk of [
    '',
    ' ',
    'null',
    'true',
    '[]',
    '[{}]',
    '"x"',
    '1e999',
    '{"a":}',
    '{,}',
    '{"from":"a@example.com"',
    '\u0000',
    '\ufeff{}',
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{}}}',
  ])
    await http(t, `junk ${JSON.stringify(junk)}`, junk);
  for (const depth of [10, 100, 1000, 10_000, 100_000])
    await http(t, `nested ${depth}`, `{"metadata":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`);
  for (const depth of [1000, 100_000])
    await http(t, `nested array ${depth}`, `{"to":${'['.repeat(depth)}${']'.repeat(depth)}}`);
  await http(t, 'huge body', JSON.stringify({ ...valid, text_body: 'x'.repeat(3_000_000) }));
  await http(
    t,
    'huge attachment',
    JSON.stringify({
      ...valid,
      attachments: [
        { filename: 'a', io: Buffer.alloc(1_200_000).toString('base64'), content_type: 'application/octet-stream' },
      ],
    }),
  );
  await http(
    t,
    'many attachments',
    JSON.stringify({
      ...valid,
      attachments: Array.from({ length: 5000 }, (_, i) => ({ filename: `f${i}`, io: 'AA==', content_type: 'a/b' })),
    }),
  );
  await http(
    t,
    'many recipients',
    JSON.stringify({ ...valid, to: Array.from({ length: 10_000 }, (_, i) => `r${i}@example.org`) }),
  );
  for (const f of FIELDS)
    for (const bad of ['\r', '\n', '\0', '\r\nBcc: x@evil.test', '\u2028', '\ud800', 'x'.repeat(100_000)])
      await http(
        t,
        `${f} with ${JSON.stringify(bad.slice(0, 12))}`,
        JSON.stringify({ ...valid, [f]: f === 'to' || f === 'from' ? `a${bad}@example.org` : `v${bad}` }),
      );
  for (const f of FIELDS)
    for (const v of [1, true, null, {}, [], [1], [[]], { a: 1 }])
      await http(t, `${f} = ${JSON.stringify(v)}`, JSON.stringify({ ...valid, [f]: v }));
  for (const io of [
    '',
    '=',
    'a',
    'ab=',
    'abc',
    'ab==c',
    'a b c d',
    'aGVsbG8',
    'aGVsbG8==',
    '****',
    'aGVs\nbG8=',
    '%%%%',
    'YQ==YQ==',
    '\u00e9\u00e9\u00e9\u00e9',
  ])
    await http(
      t,
      `io ${JSON.stringify(io)}`,
      JSON.stringify({ ...valid, attachments: [{ filename: 'f', io, content_type: 'text/plain' }] }),
    );
  for (const ct of ['', 'text', '/', 'a/', '/b', 'a/b/c', 'a b/c', 'text/plain; charset=x\r\nX: y'])
    await http(
      t,
      `content_type ${JSON.stringify(ct)}`,
      JSON.stringify({ ...valid, attachments: [{ filename: 'f', io: 'AA==', content_type: ct }] }),
    );
  for (const h of [
    { '': 'x' },
    { 'A B': 'x' },
    { 'X:Y': 'x' },
    { 'X-\u00e9': 'x' },
    { 'Content-Type': 'x' },
    { 'DKIM-Signature': 'x' },
    { X: 'a\nb' },
    { X: 1 },
  ])
    await http(t, `header ${JSON.stringify(h)}`, JSON.stringify({ ...valid, headers: h }));
  for (let i = 0; i < 20; i++) await http(t, `unknown field ${i}`, JSON.stringify({ ...valid, [`field_${i}`]: i }));
  for (const ct of [
    'text/plain',
    'application/xml',
    'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded',
    'application/jsonx',
    'application/json; charset=latin1',
  ])
    await http(t, `content-type ${ct}`, JSON.stringify(valid), ct);
  t.pass(`${cases} HTTP cases`);
  t.comment(peak());
});

async function smtpCase(t: Test, name: string, run: (c: RawSmtp) => Promise<void>): Promise<void> {
  cases++;
  const c = await RawSmtp.connect(d.smtpPort);
  const started = Date.now();
  try {
    await Promise.race([run(c), new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 10_000))]);
  } catch (e) {
    t.fail(`${name}: ${(e as Error).message}`);
  }
  c.close();
  if (Date.now() - started > 10_000) t.fail(`${name}: slow`);
}

t.test('SMTP: broken commands, oversized data, bare newlines, 8-bit headers, invalid addresses', async (t) => {
  for (const line of [
    '',
    'HELO',
    'EHLO',
    'MAIL',
    'MAIL FROM:',
    'MAIL FROM:<',
    'RCPT TO:<>',
    'DATA',
    'BDAT 10',
    'AUTH PLAIN AAAA',
    'STARTTLS',
    'VRFY root',
    'EXPN all',
    'XCLIENT ADDR=1.2.3.4',
    'x'.repeat(10_000),
    '\u00e9\u00e9',
    '\0\0\0',
  ])
    await smtpCase(t, `command ${JSON.stringify(line.slice(0, 20))}`, async (c) => {
      const r = await c.cmd(line);
      if (r && !/^[245]\d\d/.test(r)) t.fail(`odd reply ${r}`);
    });
  const addresses = [
    '',
    '<>',
    'a',
    '@',
    'a@',
    '@b',
    'a@b',
    'a@@in.example.com',
    'a@in.example.com@in.example.com',
    '"a"@in.example.com',
    'a b@in.example.com',
    '<a@in.example.com',
    'a@in.example.com>',
    `${'a'.repeat(300)}@in.example.com`,
    `a@${'b'.repeat(300)}.com`,
    'a@[1.2.3.4]',
    'a@[IPv6:::1]',
    'a@in.example.com.',
    'a@.in.example.com',
    'a\u00e9@in.example.com',
    'postmaster',
    'bounces+@bounces.test.posthaste',
    'bounces+zzzzzzzzzzzzzzzzzzzz@bounces.test.posthaste',
  ];
  for (const a of addresses)
    for (const verb of ['MAIL FROM', 'RCPT TO'])
      await smtpCase(t, `${verb} ${JSON.stringify(a)}`, async (c) => {
        await c.cmd('EHLO client.test');
        if (verb === 'RCPT TO') await c.cmd('MAIL FROM:<x@sender.test>');
        const r = await c.cmd(`${verb}:<${a}>`);
        if (!/^[245]\d\d/.test(r)) t.fail(`odd reply ${r}`);
      });
  const bodies: Array<[string, string]> = [
    ['8-bit header', 'Subject: caf\u00e9 \u00ff\u00fe\r\nFrom: \u00e9@x\r\n\r\nbody\r\n'],
    ['no header', 'just text\r\n'],
    ['header only', 'Subject: x\r\n'],
    ['1 MB header line', `X-Long: ${'a'.repeat(1_000_000)}\r\n\r\nbody\r\n`],
    [
      'deep MIME',
      `Content-Type: multipart/mixed; boundary=b0\r\n\r\n${Array.from({ length: 500 }, (_, i) => `--b${i}\r\nContent-Type: multipart/mixed; boundary=b${i + 1}\r\n\r\n`).join('')}x\r\n`,
    ],
    [
      'many parts',
      `Content-Type: multipart/mixed; boundary=q\r\n\r\n${'--q\r\nContent-Type: text/plain\r\n\r\nx\r\n'.repeat(20_000)}--q--\r\n`,
    ],
    ['NUL bytes', 'Subject: nul\r\n\r\na\0b\0c\r\n'],
  ];
  for (const [rcpt, label] of [
    ['support@in.example.com', 'receiving'],
    [bounceRcpt, 'bounce'],
    ['fbl@none.test', 'refused'],
  ] as Array<[string, string]>)
    for (const [name, body] of bodies)
      await smtpCase(t, `${label}: ${name}`, async (c) => {
        await c.cmd('EHLO client.test');
        const r = await c.send('x@sender.test', [rcpt], body);
        if (r.data && !/^[245]\d\d/.test(r.data)) t.fail(`odd reply ${r.data}`);
      });
  for (const seq of ['\n', '\r', '\r\r\n', '\n\n', 'a\rb', 'a\nb', '\r\n.\n', '\n.\r\n'])
    await smtpCase(t, `bare newline ${JSON.stringify(seq)}`, async (c) => {
      await c.cmd('EHLO client.test');
      const r = await c.send('x@sender.test', ['support@in.example.com'], `Subject: s\r\n\r\nx${seq}y\r\n`);
      if (!/^550 5\.5\.2/.test(r.data)) t.fail(`not refused: ${r.data}`);
    });
  await smtpCase(t, 'oversized DATA', async (c) => {
    await c.cmd('EHLO client.test');
    const r = await c.send(
      'x@sender.test',
      ['support@in.example.com'],
      `Subject: big\r\n\r\n${('z'.repeat(998) + '\r\n').repeat(2100)}`,
    );
    if (!/^552/.test(r.data)) t.fail(`not 552: ${r.data}`);
  });
  // A command with no newline, then the client vanishes.
  for (let i = 0; i < 5; i++) {
    cases++;
    await new Promise<void>((resolve) => {
      const s = net.connect(d.smtpPort, '127.0.0.1', () => {
        s.write('EHLO half-a-line-and-gone' + 'x'.repeat(i * 1000));
        setTimeout(() => {
          s.destroy();
          resolve();
        }, 50);
      });
      s.on('error', () => resolve());
    });
  }
  t.pass(`${cases} cases so far`);
  t.comment(peak());
});

t.test(
  'MIME and reports: nesting 1 to 10,000 deep, 100,000 parts, 1 MB header lines, broken DSN and ARF',
  async (t) => {
    const deep = (n: number) =>
      Buffer.from(
        `Content-Type: multipart/report; report-type=delivery-status; boundary=b0\r\n\r\n${Array.from({ length: n }, (_, i) => `--b${i}\r\nContent-Type: multipart/mixed; boundary=b${i + 1}\r\n\r\n`).join('')}x\r\n`,
      );
    const inputs: Array<[string, Buffer]> = [];
    for (const n of [1, 10, 100, 1000, 10_000]) inputs.push([`nested ${n}`, deep(n)]);
    inputs.push([
      '100,000 parts',
      Buffer.from(
        `Content-Type: multipart/report; report-type=feedback-report; boundary=q\r\n\r\n${'--q\r\nContent-Type: text/plain\r\n\r\nx\r\n'.repeat(100_000)}--q--\r\n`,
      ),
    ]);
    inputs.push(['1 MB header', Buffer.from(`Subject: ${'h'.repeat(1_000_000)}\r\n\r\nx`)]);
    const dsnParts = [
      'Reporting-MTA: dns; x',
      'Final-Recipient: rfc822; a@b',
      'Action: failed',
      'Status: 5.1.1',
      'Diagnostic-Code: smtp; 550 x',
      'Action: ',
      'Status: 9.9',
      'Final-Recipient:',
      ': :',
      '\u0000',
    ];
    const arfParts = [
      'Feedback-Type: abuse',
      'User-Agent: x',
      'Version: 1',
      'Original-Mail-From: <bounces+x@y>',
      'Arrival-Date: yesterday',
      'Feedback-Type:',
      'Original-Rcpt-To: <<<',
      '\u00ff',
    ];
    for (let i = 0; i < 100; i++) {
      const pick = (parts: string[]): string =>
        parts.filter((_, j) => (i >> j) & 1 || (i * 7 + j) % 3 === 0).join('\r\n');
      inputs.push([
        `dsn combo ${i}`,
        Buffer.from(
          `Content-Type: multipart/report; report-type=delivery-status; boundary=z\r\n\r\n--z\r\nContent-Type: message/delivery-status\r\n\r\n${pick(dsnParts)}\r\n\r\n${pick(dsnParts)}\r\n--z${i % 2 ? '--' : ''}\r\n`,
        ),
      ]);
      inputs.push([
        `arf combo ${i}`,
        Buffer.from(
          `Content-Type: multipart/report; report-type=feedback-report; boundary=z\r\n\r\n--z\r\nContent-Type: message/feedback-report\r\n\r\n${pick(arfParts)}\r\n--z\r\nContent-Type: message/rfc822\r\n\r\n${i % 3 ? 'Message-ID: <x@y>' : ''}\r\n--z--\r\n`,
        ),
      ]);
    }
    for (const [name, raw] of inputs) {
      cases++;
      const started = Date.now();
      try {
        readReport(raw);
      } catch (e) {
        t.fail(`${name}: threw ${(e as Error).message}`);
      }
      if (Date.now() - started > 10_000) t.fail(`${name}: took ${Date.now() - started} ms`);
    }
    // The deepest and widest also go through the listener, to the return path.
    for (const [name, raw] of inputs.slice(0, 7))
      await smtpCase(t, `listener: ${name}`, async (c) => {
        await c.cmd('EHLO client.test');
        const r = await c.send('', [bounceRcpt], raw.toString('latin1'));
        if (r.data && !/^[245]\d\d/.test(r.data)) t.fail(`odd reply ${r.data}`);
      });
    t.pass(`${cases} cases`);
  },
);

t.test('no crash, and the daemon stayed under 256 MB', async (t) => {
  t.ok(cases >= 500, `${cases} cases`);
  t.equal(d.child.exitCode, null, 'still running');
  t.equal((await fetch(`${d.apiUrl}/healthz`)).status, 200);
  const c = await RawSmtp.connect(d.smtpPort);
  t.match(await c.cmd('NOOP'), /^250/);
  c.close();
  const { peak: peakMiB } = memoryOf(d.child.pid!);
  // Measured 222-236 MB over ten runs since large messages are followed by a collection
  // (lib/reclaim.ts), 237-279 MB without it; 145-152 MB started bare (without the test runner's
  // loader threads) and with the signing and semi-space changes.
  t.ok(peakMiB < 256, `peak memory ${peakMiB} MB`);
  t.notMatch(d.output(), /Unhandled|uncaught|FATAL/i, 'no unhandled rejection or crash in the log');
});
