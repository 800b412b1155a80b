import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import nodemailer from 'nodemailer';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { fullGrant } from '../../src/domain/key-scopes.js';
import { createLogger } from '../../src/lib/logger.js';
import { FAILURES_ALLOWED } from '../../src/submission/auth.js';
import { memoryOf, spawnDaemon } from '../../support/daemon-process.js';
import { quiet, waitFor } from '../../support/wait.js';
import { getEmail } from '../helpers/api.js';
import {
  customerId,
  makeDomain,
  makeKey,
  openTestStore,
  publishDomainTxt,
  startTestServer,
  type TestServer,
  tempDir,
  writeTestConfig,
} from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { mxOfDomain } from '../helpers/mail-env.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { dkimResults, queuedAs, runProgram, submissionToml, swaks, swaksAvailable } from '../helpers/submission.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// SMTP submission as applications use it, with real clients over loopback: Debian's swaks,
// Python's smtplib (Django's mailer), nodemailer's SMTP transport; and the refusals a raw client
// meets. Each accepted message is read back through the API and delivered to a loopback MX, DKIM
// signed.

const { dns, mx } = await mxOfDomain('good.test');
const rx = await new WebhookReceiver().start();
t.teardown(() => rx.stop());
const logLines: string[] = [];
const logSink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    logLines.push(chunk.toString());
    cb();
  },
});
const s: TestServer = await startTestServer(
  `[outbound]\nport = ${mx.port}\n[metrics]\nenabled = true\nlisten = "127.0.0.1:0"\n[limits]\nmax_recipients = 5\nmax_message_bytes = 200000\n[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n` +
    submissionToml(),
  { manualDelivery: true, dns: dns.server, log: createLogger('debug', logSink) },
);
t.teardown(() => s.close());
const cid = await customerId(s.store);
const created = await s.store.keys.create({
  grant: fullGrant(),
  customerId: cid,
  kind: 'production',
  name: 'app',
  now: Date.now(),
});
const key = created.key;
const sandboxKey = (
  await s.store.keys.create({ grant: fullGrant(), customerId: cid, kind: 'sandbox', name: 'sandbox', now: Date.now() })
).key;
await makeDomain(s.store, 'example.com');
await makeDomain(s.store, 'unverified.example.com', { verified: false });
await makeDomain(s.store, 'other.example.net', { customer: 'other' });
const published = await publishDomainTxt(s.store, dns, 'example.com');
const starttlsPort = s.daemon.submission['submission.listen']!.port;
const tlsPort = s.daemon.submission['submission.listen_tls']!.port;
const ca = readFileSync(fixturePath('tls/ca.pem'));

const CRLF = (...l: string[]) => l.join('\r\n') + '\r\n';

/** Delivers what is queued and returns what the MX received for `rcpt` since `before` messages. */
async function delivered(rcpt: string, before: number): Promise<Buffer> {
  await s.daemon.scheduler.drain();
  const got = await waitFor(
    'the message at the MX',
    () => mx.received.slice(before).find((m) => m.to.includes(rcpt)),
    10_000,
    50,
  );
  return got.data;
}

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(s.daemon.metricsUrl!)).text();
  const m = new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

// Without swaks its two tests are skipped, saying why; in CI (POSTHASTE_REQUIRE_PEERS) that fails.
const skipSwaks = swaksAvailable();
if (skipSwaks && process.env.POSTHASTE_REQUIRE_PEERS) t.fail(`POSTHASTE_REQUIRE_PEERS is set but ${skipSwaks}`);

t.test(
  'swaks over STARTTLS with AUTH PLAIN: 250 names the message, which is sent as POST /api/v1/emails sends one',
  { skip: skipSwaks ?? false },
  async (t) => {
    const before = mx.received.length;
    const body = CRLF(
      'From: Shop <shop@example.com>',
      'To: Alice <alice@good.test>',
      'Bcc: hidden@good.test',
      'Subject: Your order',
      'X-Posthaste-Tag: orders',
      'X-Posthaste-Metadata-Order: 1042',
      'Return-Path: <app@localhost>',
      '',
      'Thanks for your order.',
      '.',
      '..a line that started with a dot',
    );
    const r = await swaks(
      starttlsPort,
      [
        '--tls',
        '--auth',
        'PLAIN',
        '--auth-user',
        'posthaste',
        '--auth-password',
        key,
        '--from',
        'www-data@app.internal',
        '--to',
        'alice@good.test,hidden@good.test',
        '--data',
        '-',
      ],
      body,
    );
    t.equal(r.code, 0, r.out);
    const id = queuedAs(r.out);
    t.match(id, /^[0-9a-z]+@example\.com$/, '250 names the message id');
    const m = await getEmail(s.url, key, id!);
    t.match(m, {
      message_id: id,
      from: 'Shop <shop@example.com>',
      subject: 'Your order',
      sandbox: false,
      tags: ['orders'],
      metadata: { Order: '1042' },
    });
    t.same(
      (m.recipients as Json[])
        .map((x) => [x.address, x.field ?? x.type ?? ''])
        .map((x) => x[0])
        .sort(),
      ['alice@good.test', 'hidden@good.test'],
      'the recipients are the RCPT TO addresses',
    );
    const list = await request(`${s.url}/api/v1/emails?limit=5`, { key });
    t.ok(
      (list.body.data as Json[]).some((e) => e.message_id === id),
      'GET /api/v1/emails lists it',
    );

    const got = await delivered('alice@good.test', before);
    const text = got.toString('latin1');
    t.notMatch(text, /^Bcc:/im, 'the Bcc field is removed');
    t.notMatch(text, /^X-Posthaste-/im, 'the X-Posthaste-* fields are removed');
    t.notMatch(text, /^Return-Path: <app@localhost>/im, "the client's Return-Path is removed");
    t.match(
      text,
      /^Received: from app\.test \(\[127\.0\.0\.1\]\)\r\n\tby mx\.test\.posthaste \(posthaste\) with ESMTPSA id /m,
      'a Received line naming the authenticated TLS session',
    );
    t.match(
      text,
      new RegExp(`^Message-ID: <${id!.replace('.', '\\.')}>`, 'mi'),
      'the Message-ID posthaste drew, since the client wrote none',
    );
    t.match(
      text,
      /\r\n\r\nThanks for your order\.\r\n\.\r\n\.\.a line that started with a dot\r\n/,
      'the body as written, its lines with dots too',
    );
    const at = mx.received.slice(before).find((x) => x.to.includes('alice@good.test'))!;
    t.match(
      at.from,
      /^bounces\+[0-9a-z]{20}@bounces\.test\.posthaste$/,
      "posthaste's own return path, not the client's MAIL FROM",
    );
    t.ok(at.secure, 'delivered over TLS');
    t.same(await dkimResults(got, published), ['example.com:pass'], 'DKIM-signed by example.com, and it verifies');
    const hidden = await delivered('hidden@good.test', before);
    t.notMatch(hidden.toString('latin1'), /^Bcc:/im, 'the Bcc recipient gets it without the field');
    const after = await getEmail(s.url, key, id!);
    t.same(
      (after.events as Json[])
        .filter((e) => e.type === 'email.delivered')
        .map((e) => e.data.recipient)
        .sort(),
      ['alice@good.test', 'hidden@good.test'],
      'email.delivered for each recipient',
    );
  },
);

t.test('swaks over implicit TLS with AUTH LOGIN', { skip: skipSwaks ?? false }, async (t) => {
  const r = await swaks(tlsPort, [
    '--tls-on-connect',
    '--auth',
    'LOGIN',
    '--auth-user',
    'anything',
    '--auth-password',
    key,
    '--from',
    'a@app',
    '--to',
    'bob@good.test',
    '--header',
    'From: shop@example.com',
    '--header',
    'Subject: implicit',
    '--body',
    'hi',
  ]);
  t.equal(r.code, 0, r.out);
  const id = queuedAs(r.out)!;
  t.match((await getEmail(s.url, key, id)).subject, 'implicit');
});

t.test("Python's smtplib (as Django's mailer): starttls, login, send_message with a Cc", async (t) => {
  const before = mx.received.length;
  const py = `
import smtplib, ssl, sys
from email.message import EmailMessage
m = EmailMessage()
m['From'] = 'Shop <shop@example.com>'
m['To'] = 'carol@good.test'
m['Cc'] = 'dan@good.test'
m['Subject'] = 'Caf\\u00e9 receipt'
m.set_content('Hello from Python')
ctx = ssl.create_default_context(cafile=sys.argv[3])
with smtplib.SMTP('127.0.0.1', int(sys.argv[1])) as c:
    c.starttls(context=ctx)
    c.login('posthaste', sys.argv[2])
    c.send_message(m)
    print(c.noop())
`;
  const r = await runProgram('/usr/bin/python3', ['-c', py, String(starttlsPort), key, fixturePath('tls/ca.pem')]);
  t.equal(r.code, 0, r.out);
  const got = await delivered('dan@good.test', before);
  t.match(got.toString('latin1'), /Subject: =\?utf-8\?q\?Caf=C3=A9\?= receipt/i);
  t.match(got.toString('latin1'), /Hello from Python/);
  const row = (await s.sql.get("SELECT message_id FROM messages WHERE subject = 'Café receipt'")) as {
    message_id: string;
  };
  const m = await getEmail(s.url, key, row.message_id);
  t.same((m.recipients as Json[]).map((x) => x.address).sort(), ['carol@good.test', 'dan@good.test']);
});

t.test("nodemailer's SMTP transport (requireTLS), a pooled connection sending three messages", async (t) => {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: starttlsPort,
    secure: false,
    requireTLS: true,
    pool: true,
    maxConnections: 1,
    auth: { user: 'posthaste', pass: key },
    tls: { ca },
  });
  t.teardown(() => transport.close());
  const infos = await Promise.all(
    [1, 2, 3].map((n) =>
      transport.sendMail({
        from: 'Shop <shop@example.com>',
        to: `n${n}@good.test`,
        subject: `pooled ${n}`,
        text: `message ${n}`,
        headers: { 'X-Posthaste-Tag': 'pooled' },
      }),
    ),
  );
  for (const info of infos) {
    const id = /queued as (\S+)/.exec(info.response)?.[1];
    t.ok(id, info.response);
    t.same((await getEmail(s.url, key, id!)).tags, ['pooled']);
    const stored = (await s.sql.value('SELECT request FROM messages WHERE message_id = ?', id)) as Buffer;
    t.ok(
      stored.toString('latin1').includes(`\r\nMessage-ID: ${info.messageId}\r\n`),
      "nodemailer's own Message-ID is kept",
    );
  }
});

t.test("webhooks: a submitted message's events arrive signed, with its tags and metadata", async (t) => {
  const ep = await request(`${s.url}/api/v1/webhooks`, { key, body: { url: rx.url('/events') } });
  t.equal(ep.status, 201);
  rx.secrets.set('/events', ep.body.secret);
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: tlsPort,
    secure: true,
    auth: { user: 'posthaste', pass: key },
    tls: { ca },
  });
  const info = await transport.sendMail({
    from: 'shop@example.com',
    to: 'hooked@good.test',
    subject: 'hooked',
    text: 'b',
    headers: { 'X-Posthaste-Tag': 'hooks', 'X-Posthaste-Metadata-Order': '7' },
  });
  transport.close();
  const id = /queued as (\S+)/.exec(info.response)![1]!;
  await s.daemon.scheduler.drain();
  await s.daemon.dispatcher.drain();
  const got = rx.on('/events').filter((r) => JSON.parse(r.body).data.message_id === id);
  t.same(
    got.map((r) => r.type),
    ['email.delivered'],
  );
  t.ok(got[0]?.verified, 'the signature verifies (Standard Webhooks)');
  t.match(JSON.parse(got[0]!.body).data, {
    message_id: id,
    recipient: 'hooked@good.test',
    tags: ['hooks'],
    metadata: { Order: '7' },
  });
});

t.test('a sandbox key: accepted and every event fires, nothing is delivered', async (t) => {
  await s.daemon.scheduler.drain();
  const before = mx.received.length;
  const c = await RawSmtp.connect(starttlsPort);
  await c.cmd('EHLO app.test');
  await c.startTls({ ca, servername: 'localhost' });
  await c.cmd('EHLO app.test');
  t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0posthaste\0${sandboxKey}`).toString('base64')}`), /^235 /);
  const r = await c.send(
    'x@app',
    ['zed@good.test'],
    CRLF('From: shop@example.com', 'To: zed@good.test', 'Subject: sandboxed', '', 'b'),
  );
  c.close();
  const id = /queued as (\S+)/.exec(r.data)![1]!;
  await s.daemon.scheduler.drain();
  const m = await getEmail(s.url, sandboxKey, id);
  t.equal(m.sandbox, true);
  t.same(
    (m.events as Json[]).map((e) => e.type),
    ['email.delivered'],
  );
  t.equal(mx.received.length, before, 'nothing reached the MX');
});

/** A connection over STARTTLS, authenticated with `k` (or not, when k is null). */
async function session(k: string | null, port = starttlsPort): Promise<RawSmtp> {
  const c = await RawSmtp.connect(port);
  await c.cmd('EHLO app.test');
  await c.startTls({ ca, servername: 'localhost' });
  await c.cmd('EHLO app.test');
  if (k !== null) {
    const a = await c.cmd(`AUTH PLAIN ${Buffer.from(`\0u\0${k}`).toString('base64')}`);
    if (!a.startsWith('235')) throw new Error(`AUTH: ${a}`);
  }
  return c;
}

t.test('refusals: no AUTH, the From domain, suppressed and too many recipients, smuggling, size', async (t) => {
  const plain = await RawSmtp.connect(starttlsPort);
  const ehlo = await plain.cmd('EHLO app.test');
  t.notMatch(ehlo, /AUTH/, 'no AUTH offered before TLS');
  t.match(ehlo, /STARTTLS/);
  t.match(
    await plain.cmd(`AUTH PLAIN ${Buffer.from(`\0u\0${key}`).toString('base64')}`),
    /^530 5\.7\.0 Must issue a STARTTLS command first/,
    'AUTH in the clear is refused',
  );
  t.match(await plain.cmd('MAIL FROM:<a@app>'), /^530 5\.7\.0 /);
  plain.close();

  const noauth = await session(null);
  t.match(await noauth.cmd('MAIL FROM:<a@app>'), /^530 5\.7\.0 Authentication required/);
  noauth.close();

  const c = await session(key);
  const from = async (header: string) =>
    (await c.send('a@app', ['x@good.test'], CRLF(`From: ${header}`, 'To: x@good.test', 'Subject: s', '', 'b'))).data;
  t.match(await from('a@unverified.example.com'), /^550 5\.7\.1 unverified\.example\.com is not verified yet/);
  t.match(
    await from('a@other.example.net'),
    /^550 5\.7\.1 other\.example\.net is not a sending domain of this API key's customer/,
  );
  t.match(await from('a@nowhere.test'), /^550 5\.7\.1 nowhere\.test is not a sending domain/);
  t.match(
    (await c.send('a@app', ['x@good.test'], CRLF('To: x@good.test', 'Subject: s', '', 'b'))).data,
    /^550 5\.7\.1 The message has no From field/,
  );

  await s.store.suppressions.add({ customerId: cid, address: 'gone@good.test', reason: 'manual', now: Date.now() });
  t.match(await c.cmd('MAIL FROM:<a@app>'), /^250 /);
  t.match(await c.cmd('RCPT TO:<gone@good.test>'), /^550 5\.7\.1 <gone@good\.test>: on the suppression list/);
  for (let i = 0; i < 5; i++) t.match(await c.cmd(`RCPT TO:<r${i}@good.test>`), /^250 /);
  t.match(await c.cmd('RCPT TO:<r6@good.test>'), /^452 4\.5\.3 Too many recipients/);
  t.match(await c.cmd('RSET'), /^250 /);

  t.match(
    (await c.send('a@app', ['x@good.test'], 'From: shop@example.com\r\nSubject: bare\nLF\r\n\r\nb')).data,
    /^550 5\.5\.2 Bare <CR> or <LF>/,
  );
  // The smuggling sequence <LF>.<CRLF>: a receiver that takes it for the end of DATA would read
  // what follows as commands.
  const smuggle =
    'From: shop@example.com\r\nTo: x@good.test\r\nSubject: smuggle\r\n\r\nhi\n.\r\nMAIL FROM:<a@app>\r\nRCPT TO:<x@good.test>\r\nDATA\r\nFrom: shop@example.com\r\n\r\nsmuggled';
  const count = async () => Number(await s.sql.value('SELECT count(*) FROM messages'));
  const queued = await count();
  t.match(
    (await c.send('a@app', ['x@good.test'], smuggle)).data,
    /^550 5\.5\.2 /,
    'a smuggled message is refused with the one that carries it',
  );
  t.equal(await count(), queued, 'nothing of it was queued');

  const big =
    'From: shop@example.com\r\nTo: x@good.test\r\nSubject: big\r\n\r\n' + `${'x'.repeat(998)}\r\n`.repeat(300);
  t.match((await c.send('a@app', ['x@good.test'], big)).data, /^552 /, 'over max_message_bytes: 552');
  t.match(await c.cmd('NOOP'), /^250 /, 'the connection goes on');
  c.close();
  t.ok((await metric('posthaste_submission_messages_total', 'result="too_big"')) >= 1);
  t.ok((await metric('posthaste_submission_messages_total', 'result="bare_newline"')) >= 2);
  t.ok((await metric('posthaste_submission_messages_total', 'result="refused_sender"')) >= 4);
});

t.test('a revoked key: an authenticated session cannot send after it, and the next AUTH is refused', async (t) => {
  const k = await s.store.keys.create({
    grant: fullGrant(),
    customerId: cid,
    kind: 'production',
    name: 'soon revoked',
    now: Date.now(),
  });
  const c = await session(k.key);
  const msg = CRLF('From: shop@example.com', 'To: x@good.test', 'Subject: revoked', '', 'b');
  t.match((await c.send('a@app', ['x@good.test'], msg)).data, /^250 /, 'sends while current');
  t.ok(await s.store.keys.revoke(k.id, Date.now()));
  t.match(
    (await c.send('a@app', ['x@good.test'], msg)).data,
    /^4\d\d 4\.7\.0 The API key was revoked/,
    'the next message after the revocation is refused',
  );
  t.match(await c.cmd('MAIL FROM:<a@app>'), /^530 5\.7\.0 /, 'and so is every later one on the session');
  c.close();
  t.equal(
    Number(await s.sql.value("SELECT count(*) FROM messages WHERE subject = 'revoked'")),
    1,
    'one queued, before the revocation',
  );
  await t.rejects(session(k.key), /AUTH: 535 5\.7\.8 /, 'AUTH with the revoked key: 535 5.7.8');
});

t.test(
  'wrong keys: 535 5.7.8, then the address is throttled (454 4.7.0 after a delay), counted, the password never logged',
  async (t) => {
    const failuresBefore = await metric('posthaste_submission_auth_total', 'result="failure"');
    const wrong = `ph_live_${'z'.repeat(40)}`;
    const c = await RawSmtp.connect(starttlsPort, '127.0.0.1', '127.0.0.9');
    await c.cmd('EHLO app.test');
    await c.startTls({ ca, servername: 'localhost' });
    await c.cmd('EHLO app.test');
    for (let i = 0; i < FAILURES_ALLOWED; i++)
      t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0secret-user\0${wrong}`).toString('base64')}`), /^535 5\.7\.8 /);
    const started = Date.now();
    // Now even the right key is not read from this address.
    t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0u\0${key}`).toString('base64')}`), /^454 4\.7\.0 /);
    t.ok(Date.now() - started >= 1_500, 'answered after a delay');
    c.close();
    t.equal((await metric('posthaste_submission_auth_total', 'result="failure"')) - failuresBefore, FAILURES_ALLOWED);
    t.ok((await metric('posthaste_submission_auth_total', 'result="throttled"')) >= 1);
    // Another address is not held back.
    const other = await session(key);
    other.close();
    const log = logLines.join('');
    t.match(log, /repeated failed AUTH; throttling this address/);
    t.notMatch(log, new RegExp(wrong), 'the wrong password is not in the log');
    t.notMatch(log, new RegExp(key), 'nor the right one');
    t.notMatch(log, /secret-user/, 'nor the user name');
  },
);

t.test(
  'a message far over the size limit: 552, read through without being kept (the daemon as its own process)',
  async (t) => {
    const dir = tempDir();
    t.teardown(dir.remove);
    const path = writeTestConfig(
      dir.path,
      '[limits]\nmax_message_bytes = 1000000\n[submission]\nlisten = "127.0.0.1:0"\nallow_plaintext_auth_on_loopback = true\n',
    );
    const store = await openTestStore(loadConfig({ path, env: {} }));
    const k = await makeKey(store, 'production');
    await makeDomain(store, 'example.com');
    await store.admin.close();
    const d = await spawnDaemon(path, {}, { bare: true });
    t.teardown(() => {
      if (d.child.exitCode === null) d.child.kill('SIGKILL');
    });
    const c = await RawSmtp.connect(d.submissionPort!);
    t.match(await c.cmd('EHLO app.test'), /AUTH PLAIN LOGIN/, 'AUTH offered in the clear on loopback, as allowed');
    t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0u\0${k}`).toString('base64')}`), /^235 /);
    t.match(await c.cmd('MAIL FROM:<a@app>'), /^250 /);
    t.match(await c.cmd('RCPT TO:<x@good.test>'), /^250 /);
    t.match(await c.cmd('DATA'), /^354 /);
    await quiet(500);
    const before = memoryOf(d.child.pid!).peak;
    // 128 MB written from one 1 MB buffer, against a limit of 1 MB.
    const piece = Buffer.from(`${'x'.repeat(1022)}\r\n`.repeat(1024));
    await c.write('From: shop@example.com\r\nTo: x@good.test\r\nSubject: big\r\n\r\n');
    for (let i = 0; i < 128; i++) await c.write(piece);
    t.match(await c.sendRaw('\r\n.\r\n'), /^552 /, '552 once the message has gone by');
    const grew = memoryOf(d.child.pid!).peak - before;
    t.ok(grew < 64, `128 MB went through, not kept: the daemon's peak resident memory grew by ${grew} MB`);
    t.match(await c.cmd('NOOP'), /^250 /, 'the connection goes on');
    c.close();
  },
);
