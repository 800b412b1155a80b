import { generateKeyPairSync } from 'node:crypto';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import t from 'tap';
import { ManualClock } from '../../src/lib/clock.js';
import { json, runCli } from '../helpers/cli.js';
import { customerId, makeKey } from '../helpers/env.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { RawSmtp } from '../helpers/smtp-client.js';

const clock = new ManualClock(Date.now());
const s = await startMailEnv({
  toml: '[inbound]\nrate_per_minute = 1000\n',
  daemon: { clock, smtp: 'max_message_bytes = 60000\nfeedback_address = "fbl@mx.test.posthaste"\n' },
});
const { dns, key } = s;
await s.store.domains.add({
  customerId: await customerId(s.store),
  name: 'in.example.com',
  receiving: true,
  now: Date.now(),
});
const port = s.daemon.smtp.port;

const message = (subject: string, extra = '') =>
  `From: Bob <bob@sender.test>\r\nTo: support@in.example.com\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.test>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nHello.\r\n${extra}`;

const count = async () => (await s.sql.value('SELECT COUNT(*) FROM inbound_messages')) as number;

t.test('a message for a receiving domain is stored, fires email.received, and is readable from the API', async (t) => {
  const c = await RawSmtp.connect(port);
  t.match(await c.cmd('EHLO client.sender.test'), /SIZE/);
  const r = await c.send('bob@sender.test', ['support@in.example.com'], message('First contact'));
  c.close();
  t.match(r.rcpt[0], /^250/);
  t.match(r.data, /^250 2\.0\.0 Ok: queued as in_/);
  const id = /queued as (in_\S+)/.exec(r.data)![1]!;
  const ev = (await s.sql.value("SELECT body FROM events WHERE type = 'email.received' ORDER BY seq DESC")) as string;
  t.match(JSON.parse(ev).data, {
    id,
    from: /Bob.* <bob@sender\.test>/,
    to: ['support@in.example.com'],
    subject: 'First contact',
    message_id: '<Firstcontact@sender.test>',
    attachments: 0,
    spf: String,
    dkim: String,
    dmarc: String,
  });
  const view = await request(`${s.url}/api/v1/inbound/${id}`, { key });
  t.equal(view.status, 200);
  t.match(view.body, {
    id,
    subject: 'First contact',
    text: 'Hello.\n',
    envelope: { mail_from: 'bob@sender.test', rcpt_to: ['support@in.example.com'] },
    authentication: { spf: String },
  });
  const raw = await request(`${s.url}/api/v1/inbound/${id}/raw`, { key });
  t.equal(raw.headers.get('content-type'), 'message/rfc822');
  t.match(raw.body, /Subject: First contact/);
  const other = await makeKey(s.store, 'production', 'acme');
  t.equal(
    (await request(`${s.url}/api/v1/inbound/${id}`, { key: other })).status,
    404,
    "another customer's key cannot read it",
  );
});

t.test(
  'SPF, DKIM and DMARC are checked through dns.servers: pass for an aligned signed sender, fail for a forged one',
  async (t) => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    dns.set('signed.test', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
    dns.set('s1._domainkey.signed.test', { TXT: [`v=DKIM1; k=rsa; p=${p}`] });
    dns.set('_dmarc.signed.test', { TXT: ['v=DMARC1; p=reject'] });
    dns.set('forged.test', { TXT: ['v=spf1 ip4:192.0.2.1 -all'] });
    dns.set('_dmarc.forged.test', { TXT: ['v=DMARC1; p=reject'] });
    const unsigned = (from: string, subject: string) =>
      `From: ${from}\r\nTo: support@in.example.com\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@x.test>\r\n\r\nHello.\r\n`;
    const body = unsigned('Ann <ann@signed.test>', 'signed');
    const signed = await dkimSign(body, {
      signatureData: [
        {
          signingDomain: 'signed.test',
          selector: 's1',
          privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        },
      ],
    } as unknown as Parameters<typeof dkimSign>[1]); // the d.ts types the multi-signature form loosely
    const received = async (from: string, raw: string, subject: string) => {
      const c = await RawSmtp.connect(port);
      await c.cmd('EHLO client.test');
      const r = await c.send(from, ['support@in.example.com'], raw);
      c.close();
      t.match(r.data, /^250/);
      const bodies = (
        await s.sql.all<{ body: string }>(
          "SELECT body FROM events WHERE type = 'email.received' ORDER BY seq DESC LIMIT 5",
        )
      ).map((r) => r.body);
      return bodies
        .map((b) => JSON.parse(b).data as { subject: string; spf: string; dkim: string; dmarc: string })
        .find((d) => d.subject === subject);
    };
    t.match(await received('ann@signed.test', signed.signatures + body, 'signed'), {
      spf: 'pass',
      dkim: 'pass',
      dmarc: 'pass',
    });
    t.match(await received('eve@forged.test', unsigned('Eve <eve@forged.test>', 'forged'), 'forged'), {
      spf: 'fail',
      dkim: 'none',
      dmarc: 'fail',
    });
    // A signature that no longer matches the body: not a pass (mailauth says neutral, "body hash
    // did not verify"), and SPF alone still aligns DMARC.
    t.match(await received('ann@signed.test', signed.signatures + body.replace('Hello.', 'Changed.'), 'signed'), {
      spf: 'pass',
      dkim: 'neutral',
      dmarc: 'pass',
    });
  },
);

t.test(
  'never an open relay: every address trick is refused (550 5.7.1, or 501 when smtp-server refuses the syntax first)',
  async (t) => {
    const tricks = [
      'someone@elsewhere.test',
      '@in.example.com:someone@elsewhere.test',
      'someone%elsewhere.test@in.example.com',
      'elsewhere.test!someone@in.example.com',
      '"someone@elsewhere.test"@in.example.com',
      'someone@[127.0.0.1]',
      'someone@in.example.com.elsewhere.test',
      'bounces+notatoken@elsewhere.test',
      'fbl@elsewhere.test',
      'postmaster@example.com', // a sending domain, not a receiving one
    ];
    const c = await RawSmtp.connect(port);
    await c.cmd('EHLO client.test');
    await c.cmd('MAIL FROM:<x@sender.test>');
    for (const addr of tricks) t.match(await c.cmd(`RCPT TO:<${addr}>`), /^(550 5\.7\.1|501) /, addr);
    t.match(await c.cmd('DATA'), /^5/, 'no valid recipient: DATA refused');
    c.close();
  },
);

t.test('SMTP smuggling sequences are refused and never yield a second message', async (t) => {
  const sequences = ['\n.\n', '\n.\r\n', '\r.\r\n', '\r\n.\r', '\r.\n', '\n.', '\r\n\x00.\r\n'];
  for (const seq of sequences) {
    const before = await count();
    const c = await RawSmtp.connect(port);
    await c.cmd('EHLO client.test');
    const smuggled = `${message('Smuggle')}${seq}MAIL FROM:<evil@sender.test>\r\nRCPT TO:<victim@in.example.com>\r\nDATA\r\nSubject: smuggled\r\n\r\nspoofed\r\n`;
    const r = await c.send('bob@sender.test', ['support@in.example.com'], smuggled);
    const label = JSON.stringify(seq);
    if (seq.includes('\x00') && !/[^\r]\n|\r[^\n]/.test(seq)) {
      // A NUL is not a line-ending trick: the message is one message with odd bytes, not two.
      t.ok((await count()) - before <= 1, `${label}: at most one message`);
    } else {
      t.match(r.data, /^550 5\.5\.2/, `${label}: refused`);
      t.equal(await count(), before, `${label}: nothing stored`);
    }
    t.notMatch(await c.cmd('NOOP'), /^5/, `${label}: the session is still in sync`);
    c.close();
  }
  const smuggledStored = await s.sql.value("SELECT COUNT(*) FROM inbound_messages WHERE subject = 'smuggled'");
  t.equal(smuggledStored, 0);
});

t.test('the size limit: advertised, enforced with 552, nothing stored', async (t) => {
  const c = await RawSmtp.connect(port);
  const ehlo = await c.cmd('EHLO client.test');
  const advertised = Number(/SIZE (\d+)/.exec(ehlo)![1]);
  const before = await count();
  const r = await c.send(
    'bob@sender.test',
    ['support@in.example.com'],
    message('Big', 'x'.repeat(76) + ('\r\n' + 'y'.repeat(76)).repeat(Math.ceil(advertised / 78) + 10)),
  );
  t.match(r.data, /^552/);
  t.equal(await count(), before);
  c.close();
});

t.test('inbound limits: over the per-minute limit 451 4.7.1, and inbound.limited once per hour', async (t) => {
  const cli = await runCli(['--config', s.configPath, 'domains', 'limits', 'in.example.com', '--rate', '2', '--json']);
  t.equal(cli.code, 0, cli.stderr);
  t.match(json(cli), { name: 'in.example.com', rate_per_minute: 2 });
  clock.set(Math.ceil(clock.now() / 60_000) * 60_000 + 1000); // a fresh minute
  const limitedEvents = async () =>
    (await s.sql.all<{ body: string }>("SELECT body FROM events WHERE type = 'inbound.limited'")).map((r) => r.body);
  const c = await RawSmtp.connect(port);
  await c.cmd('EHLO client.test');
  const replies: string[] = [];
  for (let i = 0; i < 4; i++)
    replies.push((await c.send('bob@sender.test', ['support@in.example.com'], message(`Limit ${i}`))).rcpt[0]!);
  t.match(replies[0], /^250/);
  t.match(replies[1], /^250/);
  t.match(replies[2], /^451 4\.7\.1/);
  t.match(replies[3], /^451 4\.7\.1/);
  t.equal((await limitedEvents()).length, 1, 'one event for two refusals');
  t.match(JSON.parse((await limitedEvents())[0]!).data, {
    domain: 'in.example.com',
    limit: 'rate',
    window_ends_at: String,
  });
  clock.advance(30 * 60_000);
  await c.send('bob@sender.test', ['support@in.example.com'], message('Limit a'));
  await c.send('bob@sender.test', ['support@in.example.com'], message('Limit b'));
  await c.send('bob@sender.test', ['support@in.example.com'], message('Limit c'));
  t.equal((await limitedEvents()).length, 1, 'still one within the hour');
  clock.advance(31 * 60_000);
  for (let i = 0; i < 3; i++) await c.send('bob@sender.test', ['support@in.example.com'], message(`Limit h${i}`));
  t.equal((await limitedEvents()).length, 2, 'again after an hour');
  c.close();
  await runCli(['--config', s.configPath, 'domains', 'limits', 'in.example.com', '--rate', 'default']);
});

t.test('suppressions API and CLI', async (t) => {
  const add = await request(`${s.url}/api/v1/suppressions`, { key, body: { address: 'Someone@Example.org' } });
  t.equal(add.status, 201);
  t.match(add.body, { address: 'someone@example.org', reason: 'manual' });
  const list = await request(`${s.url}/api/v1/suppressions?reason=manual`, { key });
  t.ok(list.body.data.some((r: Json) => r.address === 'someone@example.org'));
  const refused = await request(`${s.url}/api/v1/emails`, {
    key,
    body: { from: 'a@example.com', to: 'SOMEONE@example.org', subject: 's', text_body: 'b' },
  });
  t.equal(refused.status, 422, 'compared case-insensitively');
  t.equal((await request(`${s.url}/api/v1/suppressions/someone%40example.org`, { key, method: 'DELETE' })).status, 200);
  t.equal((await request(`${s.url}/api/v1/suppressions/someone%40example.org`, { key, method: 'DELETE' })).status, 404);
  t.equal((await request(`${s.url}/api/v1/suppressions`, { key, body: { address: 'nope' } })).status, 422);
  const cliAdd = await runCli(['--config', s.configPath, 'suppressions', 'add', 'x@example.org', '--json']);
  t.match(json(cliAdd), { address: 'x@example.org', created: true });
  t.ok(
    json<Json[]>(await runCli(['--config', s.configPath, 'suppressions', 'list', '--json'])).some(
      (r) => r.address === 'x@example.org',
    ),
  );
  t.match(json(await runCli(['--config', s.configPath, 'suppressions', 'remove', 'X@example.org', '--json'])), {
    deleted: true,
  });
  const inList = json<Json[]>(await runCli(['--config', s.configPath, 'inbound', 'list', '--json']));
  t.ok(inList.length >= 1);
  t.match(json(await runCli(['--config', s.configPath, 'inbound', 'show', inList[0].id, '--json'])), {
    id: inList[0].id,
  });
});
