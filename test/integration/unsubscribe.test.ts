// One-click unsubscribe (RFC 8058; docs/delivery.md, "One-click unsubscribe"): a message sent with
// `unsubscribe: true` reaches a loopback MX with List-Unsubscribe (an https URL and a mailto, a
// token of each recipient's own) and List-Unsubscribe-Post, both in the DKIM signature's h= and
// verified by verifiers that are not ours (mailauth, dkimpy). A POST from a real HTTP client
// suppresses the recipient and fires recipient.unsubscribed once; a GET, a forged token and a
// replay change nothing; a mail to the mailto address suppresses likewise. Runs on either engine.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import nodemailer from 'nodemailer';
import t from 'tap';
import type { ReceivedMessage } from '../../support/mx-server.js';
import { getEmail, sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { customerId, publishDomainTxt } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { receiverCheck } from '../helpers/receiver.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { submissionToml } from '../helpers/submission.js';

const PUBLIC = 'https://unsub.example.org/';
const s = await startMailEnv({
  mxDomains: ['rcpt.test'],
  toml: `[unsubscribe]\nlisten = "127.0.0.1:0"\npublic_url = "${PUBLIC}"\n${submissionToml()}`,
});
const { dns, mx, key } = s;
const published = await publishDomainTxt(s.store, dns, 'example.com');
const listener = s.daemon.unsubscribeUrl!;

const PY_VERIFY = `
import sys, json, dkim
records = json.loads(sys.argv[1])
def txt(name, timeout=5):
    return records.get(name.decode().rstrip('.'), '').encode() or None
print('pass' if dkim.verify(sys.stdin.buffer.read(), dnsfunc=txt) else 'fail')
`;
const dkimpy = (message: Buffer) =>
  execFileSync('/usr/bin/python3', ['-c', PY_VERIFY, JSON.stringify(published)], { input: message })
    .toString()
    .trim();

/** The header section of a received message, unfolded, by lower-case name (every instance). */
function headers(got: ReceivedMessage): Map<string, string[]> {
  const text = got.data.toString('latin1');
  const head = text.slice(0, text.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
  const out = new Map<string, string[]>();
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    out.set(name, [...(out.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  return out;
}

async function dkimResults(got: ReceivedMessage): Promise<Json[]> {
  return (await receiverCheck(got, dns.server)).dkim.results as Json[];
}

const delivered = (to: string) => {
  const got = mx.received.find((m) => m.to[0] === to);
  if (!got) throw new Error(`${to} not delivered`);
  return got;
};

const suppressions = async () =>
  ((await request(`${s.url}/api/v1/suppressions`, { key })).body.data as Json[]).map((r) => [r.address, r.reason]);

const tokens = new Map<string, string>();
let messageId = '';

t.test(
  'each recipient gets List-Unsubscribe of its own, signed (mailauth and dkimpy pass, h= names both)',
  async (t) => {
    messageId = await sendEmail(s.url, key, {
      from: 'News <news@example.com>',
      to: ['ann@rcpt.test', 'bob@rcpt.test'],
      subject: 'Weekly',
      text_body: 'Hello.',
      unsubscribe: true,
    });
    const plain = await sendEmail(s.url, key, {
      from: 'news@example.com',
      to: 'plain@rcpt.test',
      subject: 'x',
      text_body: 'y',
    });
    t.ok(plain);
    await s.daemon.scheduler.drain();
    for (const to of ['ann@rcpt.test', 'bob@rcpt.test']) {
      const got = delivered(to);
      const h = headers(got);
      const lu = h.get('list-unsubscribe') ?? [];
      t.equal(lu.length, 1, `${to}: one List-Unsubscribe`);
      const m =
        /^<https:\/\/unsub\.example\.org\/u\/([0-9a-z]{20})>, <mailto:unsubscribe\+([0-9a-z]{20})@bounces\.test\.posthaste>$/.exec(
          lu[0] ?? '',
        );
      t.ok(m, `${to}: the https URL and the mailto: ${lu[0]}`);
      t.equal(m?.[1], m?.[2], 'one token in both');
      tokens.set(to, m![1]!);
      t.same(h.get('list-unsubscribe-post'), ['List-Unsubscribe=One-Click']);
      const sig = (h.get('dkim-signature') ?? [])[0] ?? '';
      const signed = /h=([^;]+)/.exec(sig)![1]!.replace(/\s/g, '').toLowerCase().split(':');
      t.ok(signed.includes('list-unsubscribe') && signed.includes('list-unsubscribe-post'), `h= names both: ${signed}`);
      const results = await dkimResults(got);
      t.same(
        results.map((r) => [r.status.result, r.signingDomain]),
        [['pass', 'example.com']],
        `${to}: mailauth`,
      );
      t.equal(dkimpy(got.data), 'pass', `${to}: dkimpy`);
    }
    t.not(tokens.get('ann@rcpt.test'), tokens.get('bob@rcpt.test'), 'a token per recipient');
    t.notOk(headers(delivered('plain@rcpt.test')).has('list-unsubscribe'), 'a send that did not ask has none');
  },
);

t.test('a GET shows a page with a button and changes nothing; a forged token is a 404 either way', async (t) => {
  const url = `${listener}/u/${tokens.get('ann@rcpt.test')}`;
  const r = await fetch(url);
  t.equal(r.status, 200);
  const html = await r.text();
  t.match(html, /<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">/);
  t.same(await suppressions(), [], 'nothing suppressed by a GET');
  const token = tokens.get('ann@rcpt.test')!;
  const forged = `${token.slice(0, 19)}${token.endsWith('a') ? 'b' : 'a'}`;
  const other = `${'0'.repeat(8)}${token.slice(8)}`;
  for (const bad of [forged, other, 'x'])
    for (const method of ['GET', 'POST']) {
      const answer = await fetch(`${listener}/u/${bad}`, {
        method,
        ...(method === 'POST'
          ? { body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } }
          : {}),
      });
      t.equal(answer.status, 404, `${method} ${bad}`);
      t.notMatch(await answer.text(), /forg|mac|signature|token/i, 'the page does not say why');
    }
  const wrongBody = await fetch(url, {
    method: 'POST',
    body: 'List-Unsubscribe=No',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(wrongBody.status, 400, 'a POST without the one-click body');
  t.same(await suppressions(), [], 'still nothing suppressed');
});

t.test(
  'the one-click POST suppresses the recipient and fires recipient.unsubscribed once; a replay fires nothing',
  async (t) => {
    const url = `${listener}/u/${tokens.get('ann@rcpt.test')}`;
    for (let i = 0; i < 2; i++) {
      const r = await fetch(url, {
        method: 'POST',
        body: new URLSearchParams({ 'List-Unsubscribe': 'One-Click' }),
      });
      t.equal(r.status, 200, `POST ${i + 1}`);
    }
    t.same(await suppressions(), [['ann@rcpt.test', 'unsubscribe']], 'ann, and only ann');
    const events = (await getEmail(s.url, key, messageId)).events.filter(
      (e: Json) => e.type === 'recipient.unsubscribed',
    );
    t.equal(events.length, 1, 'one event');
    t.match(events[0].data, {
      recipient: 'ann@rcpt.test',
      reason: 'unsubscribe',
      method: 'one_click',
      message_id: messageId,
    });
    const again = await request(`${s.url}/api/v1/emails`, {
      key,
      body: { from: 'news@example.com', to: 'ann@rcpt.test', subject: 'x', text_body: 'y' },
    });
    t.equal(again.status, 422, 'a send to ann is refused now');
  },
);

t.test('a mail to the mailto address suppresses likewise; a forged one is refused at RCPT', async (t) => {
  const token = tokens.get('bob@rcpt.test')!;
  const c = await RawSmtp.connect(s.daemon.smtp.port);
  await c.cmd('EHLO mx.rcpt.test');
  const forged = `unsubscribe+${token.slice(0, 19)}${token.endsWith('a') ? 'b' : 'a'}@bounces.test.posthaste`;
  const r = await c.send(
    'bob@rcpt.test',
    [forged, `unsubscribe+${token}@bounces.test.posthaste`],
    'From: bob@rcpt.test\r\nSubject: unsubscribe\r\n\r\nunsubscribe\r\n',
  );
  c.close();
  t.match(r.rcpt[0], /^550 /, 'a forged token is refused');
  t.match(r.rcpt[1], /^250 /);
  t.match(r.data, /^250 /);
  t.same((await suppressions()).sort(), [
    ['ann@rcpt.test', 'unsubscribe'],
    ['bob@rcpt.test', 'unsubscribe'],
  ]);
  const events = (await getEmail(s.url, key, messageId)).events.filter(
    (e: Json) => e.type === 'recipient.unsubscribed' && e.data.recipient === 'bob@rcpt.test',
  );
  t.equal(events.length, 1);
  t.equal(events[0].data.method, 'mailto');
});

t.test("the customer's default adds the fields to a send that did not ask", async (t) => {
  await s.store.customers.setUnsubscribeDefault(await customerId(s.store), true);
  t.teardown(async () => s.store.customers.setUnsubscribeDefault(await customerId(s.store), false));
  await sendEmail(s.url, key, { from: 'news@example.com', to: 'carol@rcpt.test', subject: 'x', text_body: 'y' });
  await s.daemon.scheduler.drain();
  const got = delivered('carol@rcpt.test');
  t.match(headers(got).get('list-unsubscribe')?.[0], /^<https:\/\/unsub\.example\.org\/u\/[0-9a-z]{20}>, <mailto:/);
  t.equal(dkimpy(got.data), 'pass');
});

t.test(
  'the API refuses unsubscribe: true on a server with no public_url (422), and a List-Unsubscribe of its own',
  async (t) => {
    const own = await request(`${s.url}/api/v1/emails`, {
      key,
      body: {
        from: 'news@example.com',
        to: 'dan@rcpt.test',
        subject: 'x',
        text_body: 'y',
        unsubscribe: true,
        headers: { 'List-Unsubscribe': '<mailto:x@example.com>' },
      },
    });
    t.equal(own.status, 422);
    t.match(own.body.error.details, { headers: [/List-Unsubscribe cannot be given/] });

    const bare = await startMailEnv({ mxDomains: ['rcpt.test'], scope: t, toml: submissionToml() });
    const r = await request(`${bare.url}/api/v1/emails`, {
      key: bare.key,
      body: { from: 'news@example.com', to: 'dan@rcpt.test', subject: 'x', text_body: 'y', unsubscribe: true },
    });
    t.equal(r.status, 422);
    t.match(r.body.error, { code: 'validation_failed', details: { unsubscribe: [/unsubscribe\.public_url/] } });
    t.equal(bare.daemon.unsubscribeUrl, null, 'no listener without unsubscribe.listen');

    const refused = await submit(
      bare.daemon.submission['submission.listen_tls']!.port,
      bare.key,
      'dan@rcpt.test',
    ).catch((e: { responseCode?: number; response?: string }) => e);
    t.match(refused, {
      responseCode: 550,
      response: /^550 5\.6\.0 X-Posthaste-Unsubscribe: .*unsubscribe\.public_url/,
    });
    const cli = await runCli(['--config', bare.configPath, 'customers', 'set', 'default', '--unsubscribe', 'on']);
    t.not(cli.code, 0);
    t.match(cli.stderr, /unsubscribe\.public_url is not configured/);
  },
);

/** One message over submission (implicit TLS) with X-Posthaste-Unsubscribe: yes; the 250's text. */
async function submit(port: number, apiKey: string, to: string): Promise<string> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: true,
    auth: { user: 'posthaste', pass: apiKey },
    tls: { ca: readFileSync(fixturePath('tls/ca.pem')) },
  });
  try {
    const info = await transport.sendMail({
      from: 'news@example.com',
      to,
      subject: 'submitted',
      text: 'b',
      headers: { 'X-Posthaste-Unsubscribe': 'yes' },
    });
    return info.response;
  } finally {
    transport.close();
  }
}

t.test('submission: X-Posthaste-Unsubscribe: yes adds the fields and is not sent', async (t) => {
  await submit(s.daemon.submission['submission.listen_tls']!.port, key, 'erin@rcpt.test');
  await s.daemon.scheduler.drain();
  const got = delivered('erin@rcpt.test');
  const h = headers(got);
  t.match(h.get('list-unsubscribe')?.[0], /^<https:\/\/unsub\.example\.org\/u\/[0-9a-z]{20}>, <mailto:/);
  t.same(h.get('list-unsubscribe-post'), ['List-Unsubscribe=One-Click']);
  t.notOk(
    [...h.keys()].some((k) => k.startsWith('x-posthaste')),
    'the X-Posthaste field is not sent',
  );
  t.equal(dkimpy(got.data), 'pass');
});

t.test('customers set --unsubscribe on|off, and show', async (t) => {
  const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);
  t.equal((await cli('customers', 'set', 'default', '--unsubscribe', 'on')).code, 0);
  t.match(json(await cli('customers', 'show', 'default', '--json')), { unsubscribe: 'on' });
  t.equal(await s.store.customers.unsubscribeDefault(await customerId(s.store)), true);
  t.equal((await cli('customers', 'set', 'default', '--unsubscribe', 'off')).code, 0);
  t.match(json(await cli('customers', 'show', 'default', '--json')), { unsubscribe: 'off' });
  const bad = await cli('customers', 'set', 'default', '--unsubscribe', 'maybe');
  t.not(bad.code, 0);
  t.match(bad.stderr, /on or off/);
  t.not((await cli('customers', 'set', 'nobody', '--unsubscribe', 'on')).code, 0, 'an unknown customer');
});
