import t from 'tap';
import { getEmail } from '../helpers/api.js';
import { fixture } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { RawSmtp } from '../helpers/smtp-client.js';

const s = await startMailEnv({
  mxDomains: ['example.net'],
  daemon: { smtp: 'feedback_address = "fbl@mx.test.posthaste"\n' },
});
const { mx, key } = s;
const FIXTURE_VERP = 'bounces+0000001k5c2y8qh3h0wz@bounces.test.posthaste';

async function deliverTo(to: string): Promise<{ id: string; returnPath: string }> {
  const r = await request(`${s.url}/api/v1/emails`, {
    key,
    body: { from: 'Shop <shop@example.com>', to, subject: 'Your order', text_body: 'Thanks' },
  });
  await s.daemon.scheduler.drain();
  const got = mx.received.find((m) => m.to[0] === to)!;
  return { id: r.body.message_id, returnPath: got.from };
}

async function inject(rcpt: string, raw: Buffer): Promise<string> {
  const c = await RawSmtp.connect(s.daemon.smtp.port);
  await c.cmd('EHLO mx.example.net');
  const r = await c.send('', [rcpt], raw);
  c.close();
  return `${r.rcpt[0]} / ${r.data}`;
}

const events = async (id: string): Promise<Json[]> => (await getEmail(s.url, key, id)).events;

t.test(
  'a DSN to the return path of a delivered message: email.bounced async, suppressed, later sends refused',
  async (t) => {
    const { id, returnPath } = await deliverTo('bob@example.net');
    const dsn = Buffer.from(
      fixture('dsn/postfix.eml')
        .toString()
        .replaceAll(FIXTURE_VERP, returnPath)
        .replaceAll('<01jdsnfixture00000000000000@example.com>', `<${id}>`),
    );
    t.match(await inject(returnPath, dsn), /^250 .*\/ 250/);
    const ev = await events(id);
    t.same(
      ev.map((e) => e.type),
      ['email.delivered', 'email.bounced', 'recipient.suppressed'],
    );
    t.match(ev[1].data, {
      bounce_type: 'async',
      recipient: 'bob@example.net',
      response: { code: 550, enhanced_code: '5.1.1', classification: 'unknown_recipient' },
    });
    t.match(ev[2].data, { reason: 'hard_bounce', recipient: 'bob@example.net' });
    const again = await request(`${s.url}/api/v1/emails`, {
      key,
      body: { from: 'shop@example.com', to: 'bob@example.net', subject: 's', text_body: 'b' },
    });
    t.equal(again.status, 422);
    t.equal(again.body.error.code, 'recipient_suppressed');
    // The same DSN again changes nothing (one event per outcome).
    await inject(returnPath, dsn);
    t.equal((await events(id)).length, 3);
  },
);

t.test('a delay warning and a DSN with a forged token are accepted, recorded, and change nothing', async (t) => {
  const { id, returnPath } = await deliverTo('carol@example.net');
  const delayed = Buffer.from(fixture('dsn/postfix-delayed.eml').toString().replaceAll(FIXTURE_VERP, returnPath));
  t.match(await inject(returnPath, delayed), /250/);
  const forged = returnPath.replace(/bounces\+(\w{8})\w{12}@/, 'bounces+$1aaaaaaaaaaaa@');
  const dsn = Buffer.from(fixture('dsn/postfix.eml').toString().replaceAll(FIXTURE_VERP, forged));
  t.match(await inject(forged, dsn), /^250 .*\/ 250/, 'accepted: no backscatter');
  t.same(
    (await events(id)).map((e) => e.type),
    ['email.delivered'],
  );
  const unmatched = (await s.sql.value(
    "SELECT COUNT(*) FROM inbound_reports WHERE kind = 'dsn' AND recipient_id IS NULL",
  )) as number;
  t.ok(unmatched >= 1, 'kept as unmatched');
});

t.test('an ARF report about a delivered message: email.complained once, suppressed', async (t) => {
  const { id, returnPath } = await deliverTo('dave@example.net');
  const arf = Buffer.from(fixture('arf/yahoo.eml').toString().replaceAll(FIXTURE_VERP, returnPath));
  t.match(await inject('fbl@mx.test.posthaste', arf), /^250 .*\/ 250/);
  await inject('fbl@mx.test.posthaste', arf); // reported twice: one event
  const ev = await events(id);
  t.same(
    ev.map((e) => e.type),
    ['email.delivered', 'email.complained', 'recipient.suppressed'],
  );
  t.match(ev[1].data, {
    feedback_type: 'abuse',
    user_agent: 'Yahoo!-Mail-Feedback/2.0',
    arrival_date: 'Sat, 21 Nov 2026 10:00:00 +0000',
    recipient: 'dave@example.net',
  });
  t.match(ev[2].data, { reason: 'spam_complaint' });
  const again = await request(`${s.url}/api/v1/emails`, {
    key,
    body: { from: 'shop@example.com', to: 'dave@example.net', subject: 's', text_body: 'b' },
  });
  t.equal(again.body.error?.code, 'recipient_suppressed');
});

t.test(
  "a Microsoft JMRP report, recipient redacted, is tied to the recipient by the original's Return-Path",
  async (t) => {
    // JMRP redacts Original-Rcpt-To but keeps the original's Return-Path, as the real ones in the
    // corpus do (docs/inbound.md, "Which recipient a report is about").
    const { id, returnPath } = await deliverTo('erin@example.net');
    const arf = Buffer.from(
      fixture('arf/microsoft.eml')
        .toString()
        .replaceAll(FIXTURE_VERP, returnPath)
        .replaceAll('<01jdsnfixture00000000000000@example.com>', `<${id}>`),
    );
    t.match(await inject('fbl@mx.test.posthaste', arf), /^250 .*\/ 250/);
    t.same(
      (await events(id)).map((e) => e.type),
      ['email.delivered', 'email.complained', 'recipient.suppressed'],
    );
  },
);

t.test('a malformed report gives no event and no crash', async (t) => {
  const { id, returnPath } = await deliverTo('frank@example.net');
  t.match(await inject(returnPath, fixture('dsn/broken-report.eml')), /250/);
  t.match(await inject('fbl@mx.test.posthaste', fixture('arf/missing-type.eml')), /250/);
  t.same(
    (await events(id)).map((e) => e.type),
    ['email.delivered'],
  );
});

t.test('a complaint that comes to the return path is read as the complaint it is', async (t) => {
  const { id, returnPath } = await deliverTo('grace@example.net');
  const arf = Buffer.from(fixture('arf/yahoo.eml').toString().replaceAll(FIXTURE_VERP, returnPath));
  t.match(await inject(returnPath, arf), /^250 .*\/ 250/);
  const ev = await events(id);
  t.same(
    ev.map((e) => e.type),
    ['email.delivered', 'email.complained', 'recipient.suppressed'],
  );
  t.match(ev[2].data, { reason: 'spam_complaint', recipient: 'grace@example.net' });
});

t.test(
  '"550 Unknown user" after DATA bounces the message but leaves the address usable (a provider\'s content filter says it so)',
  async (t) => {
    const { id, returnPath } = await deliverTo('hana@example.net');
    const dsn = Buffer.from(
      fixture('dsn/postfix-after-data.eml')
        .toString()
        .replaceAll(FIXTURE_VERP, returnPath)
        .replaceAll('hana@docomo.example', 'hana@example.net'),
    );
    t.match(await inject(returnPath, dsn), /^250 .*\/ 250/);
    const ev = await events(id);
    t.same(
      ev.map((e) => e.type),
      ['email.delivered', 'email.bounced'],
    );
    t.match(ev[1].data, {
      bounce_type: 'async',
      response: { code: 550, classification: 'unknown_recipient', message: /Unknown user/ },
    });
    const again = await request(`${s.url}/api/v1/emails`, {
      key,
      body: { from: 'shop@example.com', to: 'hana@example.net', subject: 's', text_body: 'b' },
    });
    t.equal(again.status, 202, 'not suppressed');
  },
);

t.test(
  "a one-line refusal that names no one bounces the return path's recipient, as a policy refusal, and suppresses nothing",
  async (t) => {
    const { id, returnPath } = await deliverTo('ivan@example.net');
    const refusal = Buffer.from(fixture('dsn/one-line-refusal.eml').toString().replaceAll(FIXTURE_VERP, returnPath));
    t.match(await inject(returnPath, refusal), /^250 .*\/ 250/);
    const ev = await events(id);
    t.same(
      ev.map((e) => e.type),
      ['email.delivered', 'email.bounced'],
    );
    t.match(ev[1].data, {
      bounce_type: 'async',
      recipient: 'ivan@example.net',
      response: { classification: 'policy', message: "Your message was rejected by the recipient's filter." },
    });
    const again = await request(`${s.url}/api/v1/emails`, {
      key,
      body: { from: 'shop@example.com', to: 'ivan@example.net', subject: 's', text_body: 'b' },
    });
    t.equal(again.status, 202, 'not suppressed');
  },
);
