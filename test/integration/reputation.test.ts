import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import nodemailer from 'nodemailer';
import t from 'tap';
import { waitFor } from '../../support/wait.js';
import { sendEmail } from '../helpers/api.js';
import { runCli } from '../helpers/cli.js';
import { makeDomain, makeKey } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { expectError, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { submissionToml } from '../helpers/submission.js';

// A customer's reputation end to end (docs/operations.md, "Reputation"), with real deliveries to a
// loopback MX: a customer whose mail starts bouncing at 10 % is paused by itself before 300 more of
// its recipients are attempted, customer.paused fires once, another customer's mail still flows;
// a paused customer's sends are refused over the API (403) and SMTP (550) but its sandbox works;
// its queued mail is held and goes once an administrator resumes it; pausing by hand; bad input.

const env = await startMailEnv({
  mxDomains: ['list.example', 'good.example'],
  domains: ['example.com'],
  daemon: { manualDelivery: false },
  // The default: connections of 100 messages each, several open to the list's MX at once. The pause
  // holds within the bound all the same: a connection's outcomes count as they come, and what it has
  // not sent yet of a paused customer's goes back to the queue (docs/operations.md, "Reputation").
  outbound: 'messages_per_connection = 100\n',
  toml: `[metrics]\nenabled = true\nlisten = "127.0.0.1:0"\n${submissionToml()}`,
});
const { store, sql, mx, url, configPath } = env;
await makeDomain(store, 'shop.example', { customer: 'shop' });
const shopKey = await makeKey(store, 'production', 'shop');
const shopSandbox = await makeKey(store, 'sandbox', 'shop');
const shopId = (await store.customers.find('shop'))!.id;
const defaultId = (await store.customers.find('default'))!.id;
const tlsPort = env.daemon.submission['submission.listen_tls']!.port;
const ca = readFileSync(fixturePath('tls/ca.pem'));

// One list address in ten does not exist: 550 5.1.1, a hard bounce that suppresses.
mx.script = (rcpt) => {
  const n = /^u(\d+)@list\.example$/.exec(rcpt);
  return n && Number(n[1]) % 10 === 0 ? { rcpt: [550, '5.1.1 <' + rcpt + '>: no such user'] } : undefined;
};
const listAttempts = () => [...mx.attempts.keys()].filter((a) => a.endsWith('@list.example')).length;
const goodDelivered = () => mx.received.filter((m) => m.to.some((a) => a.endsWith('@good.example'))).length;
const events = (type: string, customerId: number) =>
  sql.value('SELECT count(*) FROM events WHERE type = ? AND customer_id = ?', type, customerId);
const cli = (...args: string[]) => runCli([...args, '--config', configPath]);

async function sendBatch(key: string, from: string, to: string[]): Promise<void> {
  const r = await request(`${url}/api/v1/emails/batch`, {
    key,
    body: to.map((a) => ({ from, to: a, subject: 'Offer', text_body: 'Hello' })),
  });
  if (r.status !== 202) throw new Error(`batch: ${r.status} ${JSON.stringify(r.body)}`);
}

function submit(key: string, from: string, to: string) {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: tlsPort,
    secure: true,
    auth: { user: 'posthaste', pass: key },
    tls: { ca },
  });
  return transport.sendMail({ from, to, subject: 'Hi', text: 'Hello' }).finally(() => transport.close());
}

t.test('a customer bouncing at 10 % is paused by itself, once; the others still send', async (t) => {
  const total = 800;
  for (let i = 0; i < total; i += 100)
    await sendBatch(
      shopKey,
      'news@shop.example',
      Array.from({ length: 100 }, (_, j) => `u${i + j + 1}@list.example`),
    );
  for (let i = 0; i < 20; i++)
    await sendEmail(url, env.key, { from: 'a@example.com', to: `g${i}@good.example`, subject: 's', text_body: 'b' });
  const paused = await waitFor('the shop paused', async () => {
    const s = await store.reputation.standing(shopId);
    return s.state === 'paused' && s;
  });
  t.equal(paused.paused_by, 'reputation');
  t.match(paused.reason, /^bounce rate \d+(\.\d+)?% \(threshold 8%\)$/);
  // What was claimed before the pause goes on; nothing more is.
  await waitFor('the deliveries under way finished', async () => {
    const before = listAttempts();
    await new Promise((r) => setTimeout(r, 1500));
    return listAttempts() === before;
  });
  const attempted = listAttempts();
  t.ok(attempted >= 200, `judged only once 200 had an outcome (${attempted} attempted)`);
  t.ok(attempted < 200 + 300, `paused before 300 more were attempted (${attempted} attempted)`);
  t.ok(attempted < total, 'the rest is held');
  // What was not sent (waiting, or not yet sent on an open connection) is back in the queue as it was.
  const shopRows = (where: string) =>
    sql.value(`SELECT count(*) FROM recipients WHERE customer_id = ? AND ${where}`, shopId);
  t.equal(await shopRows('attempts > 0'), attempted, 'an attempt counted only for what reached the MX');
  t.equal(await shopRows("state = 'queued' AND attempts = 0"), total - attempted, 'the rest queued, unattempted');
  t.equal(await sql.value('SELECT count(*) FROM recipient_claims'), 0, 'no claim left behind');
  t.equal(await events('customer.paused', shopId), 1, 'customer.paused once');
  const body = JSON.parse(
    (await sql.get<{ body: string }>(
      "SELECT body FROM events WHERE type = 'customer.paused' AND customer_id = ?",
      shopId,
    ))!.body,
  );
  t.match(body.data, {
    customer: 'shop',
    state: 'paused',
    by: 'reputation',
    window: { days: 7, min_recipients: 200 },
    threshold: { bounce_rate: 8, complaint_rate: 0.3 },
  });
  t.ok(body.data.rates.bounce_rate >= 8);
  t.ok(body.data.rates.recipients >= 200);
  // The other customer: everything it sent is delivered, and what it sends now too.
  await waitFor('the default customer delivered', () => goodDelivered() === 20);
  await sendEmail(url, env.key, { from: 'a@example.com', to: 'after@good.example', subject: 's', text_body: 'b' });
  await waitFor('the default customer still delivers', () => goodDelivered() === 21);
  t.equal((await store.reputation.standing(defaultId)).state, 'ok');
  const metrics = await (await fetch(env.daemon.metricsUrl!)).text();
  t.match(metrics, /^posthaste_customer_state\{customer="shop",state="paused"\} 1$/m, '/metrics: the state');
  t.match(metrics, /^posthaste_customer_state\{customer="default",state="ok"\} 1$/m);
  const rate = Number(/^posthaste_customer_bounce_rate_percent\{customer="shop"\} (\S+)$/m.exec(metrics)?.[1]);
  // The rate now, with what the connections open at the pause recorded after it: it may have come
  // back under the threshold (a pause holds until an administrator resumes it).
  const { counts } = await store.reputation.counts(shopId, 0);
  const now = (100 * counts.rep_hard) / counts.rep_outcome;
  t.ok(Math.abs(rate - now) < 0.01, `/metrics: the bounce rate (${rate}; ${counts.rep_hard} of ${counts.rep_outcome})`);
  const shown = await cli('customers', 'show', 'shop');
  t.match(shown.stdout, /state: paused/);
  t.match(shown.stdout, /paused_by: reputation/);
});

t.test("a paused customer's sends: API 403, SMTP 550, its sandbox still works", async (t) => {
  const r = await request(`${url}/api/v1/emails`, {
    key: shopKey,
    body: { from: 'news@shop.example', to: 'x@list.example', subject: 's', text_body: 'b' },
  });
  expectError(t, r, 403, 'customer_paused');
  t.match(r.body.error.message, /paused.*bounce rate.*administrator/);
  const smtp = await submit(shopKey, 'news@shop.example', 'y@list.example').then(
    () => undefined,
    (e: { responseCode?: number; response?: string }) => e,
  );
  t.equal(smtp?.responseCode, 550, 'SMTP submission refused with 550');
  t.match(smtp?.response, /5\.7\.1 Sending is paused/);
  const sandbox = await request(`${url}/api/v1/emails`, {
    key: shopSandbox,
    body: { from: 'news@shop.example', to: 'delivered@simulator.posthaste.test', subject: 's', text_body: 'b' },
  });
  t.equal(sandbox.status, 202, 'the sandbox key still sends');
});

t.test('resumed: the held mail goes out; pause and resume by hand', async (t) => {
  const before = listAttempts();
  mx.script = () => undefined; // the list's addresses now all accepted: nothing pauses the shop again
  const resumed = await cli('customers', 'resume', 'shop');
  t.equal(resumed.code, 0, resumed.stderr);
  await waitFor('the held mail attempted', () => listAttempts() === 800, 60_000, 50);
  t.ok(listAttempts() > before);
  t.equal(await events('customer.resumed', shopId), 1, 'customer.resumed once');
  const again = await cli('customers', 'resume', 'shop');
  t.equal(again.code, 1);
  t.match(again.stderr, /not paused/);

  // By hand, the default customer: its queued mail is held while paused, sent after.
  t.equal((await cli('customers', 'pause', 'default', '--reason', 'checking a complaint')).code, 0);
  const r = await request(`${url}/api/v1/emails`, {
    key: env.key,
    body: { from: 'a@example.com', to: 'held@good.example', subject: 's', text_body: 'b' },
  });
  expectError(t, r, 403, 'customer_paused');
  t.match(r.body.error.message, /checking a complaint/);
  t.equal((await cli('customers', 'resume', 'default')).code, 0);
  // Queued (due in 8 s), then the customer paused: held, not sent, not expired.
  const due = Date.now() + 8000;
  await sendEmail(url, env.key, {
    from: 'a@example.com',
    to: 'queued@good.example',
    subject: 's',
    text_body: 'b',
    scheduled_at: new Date(due).toISOString(),
  });
  t.equal((await cli('customers', 'pause', 'default', '--reason', 'again')).code, 0);
  t.ok(Date.now() < due, 'paused before it was due');
  await new Promise((r) => setTimeout(r, due + 3000 - Date.now()));
  t.notOk(
    mx.received.some((m) => m.to.includes('queued@good.example')),
    'not sent while paused',
  );
  t.equal((await cli('customers', 'resume', 'default')).code, 0);
  await waitFor('sent after the resume', () => mx.received.some((m) => m.to.includes('queued@good.example')));
  t.equal(await events('customer.paused', defaultId), 2);
  t.equal(await events('customer.resumed', defaultId), 2);
});

t.test('bad input: an unknown customer, a pause without a reason, a threshold above 100 %', async (t) => {
  const unknown = await cli('customers', 'pause', 'nobody', '--reason', 'x');
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /no customer named "nobody"/);
  const noReason = await cli('customers', 'pause', 'shop', '--reason', '  ');
  t.equal(noReason.code, 1);
  t.match(noReason.stderr, /needs a reason/);
  t.equal((await store.reputation.standing(shopId)).state, 'ok', 'nothing changed');
  const bad = join(dirname(configPath), 'bad.toml');
  writeFileSync(bad, `${readFileSync(configPath, 'utf8')}\n[reputation]\npause_bounce_rate = "120%"\n`);
  const r = await runCli(['customers', 'list', '--config', bad]);
  t.equal(r.code, 2, 'a configuration error');
  t.match(r.stderr, /reputation\.pause_bounce_rate: must be between 0% and 100%/);
  writeFileSync(bad, `${readFileSync(configPath, 'utf8')}\n[reputation]\nwarning_bounce_rate = "10%"\n`);
  const order = await runCli(['customers', 'show', 'shop', '--config', bad]);
  t.equal(order.code, 1);
  t.match(order.stderr, /warning_bounce_rate \(10%\) is above reputation\.pause_bounce_rate/);
});
