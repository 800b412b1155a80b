import { readFileSync } from 'node:fs';
import t from 'tap';
import { ManualClock } from '../../src/lib/clock.js';
import { hashPassword } from '../../src/lib/password.js';
import { json, runCli } from '../helpers/cli.js';
import { customerId, makeKey } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { submissionToml } from '../helpers/submission.js';

// A customer's send quotas (docs/operations.md, "Send quotas"), on the test engine: counted in
// recipients accepted, judged in the transaction that accepts, so concurrent sends never get more
// than the quota; 429 rate_limited with Retry-After to the second (the daemon's clock is the
// test's), a batch judged item by item, sandbox keys counted apart, SMTP submission 451 4.7.1.

// 12:00:17.400 UTC: the minute ends in 42.6 s (Retry-After 43), the day in 11 h 59 min 42.6 s.
const clock = new ManualClock(Date.UTC(2026, 10, 28, 12, 0, 17, 400));
const s = await startMailEnv({
  mxDomains: ['q.test'],
  toml: `[limits]\nsandbox_send_per_minute = 5\nmax_recipients = 10\n${submissionToml()}`,
  daemon: { clock, dashboard: '' },
});
const cid = await customerId(s.store);
const url = `${s.url}/api/v1/emails`;
const msg = (to: string | string[]) => ({ from: 'shop@example.com', to, subject: 'q', text_body: 'x' });
const accepted = async () =>
  Number(await s.sql.value('SELECT COUNT(*) FROM recipients WHERE customer_id = ?', cid)) as number;

t.test('50 concurrent sends against 20 a minute: exactly 20 accepted, the rest 429 with Retry-After', async (t) => {
  t.ok(await s.store.customers.setQuotas(cid, { perMinute: 20 }));
  const before = await accepted();
  const rs = await Promise.all(
    Array.from({ length: 50 }, (_, i) => request(url, { key: s.key, body: msg(`r${i}@q.test`) })),
  );
  t.equal(rs.filter((r) => r.status === 202).length, 20, 'exactly the quota accepted');
  const refused = rs.filter((r) => r.status !== 202);
  t.equal(refused.length, 30);
  for (const r of refused) {
    expectError(t, r, 429, 'rate_limited');
    t.equal(r.headers.get('retry-after'), '43', 'seconds until the next minute');
    t.same(Object.keys(r.body.error.details), ['per_minute']);
  }
  t.equal((await accepted()) - before, 20, 'and exactly 20 recipients stored');
  t.same((await s.store.customers.quotaUse(cid, clock.now())).live[0], 20);
});

t.test("the dashboard's customers page shows the use against each quota", async (t) => {
  const base = s.daemon.dashboardUrl!;
  await s.store.users.add({
    email: 'admin@ops.test',
    passwordHash: await hashPassword('a long enough password'),
    role: 'admin',
    customerId: null,
    now: clock.now(),
  });
  const login = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base, 'sec-fetch-site': 'same-origin' },
    body: 'email=admin%40ops.test&password=a+long+enough+password',
  });
  t.equal(login.status, 303);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${base}/customers`, { headers: { cookie } })).text();
  t.match(page, /<li>a minute: 20 of 20; <span class="muted">sandbox 0 of 5<\/span><\/li>/);
  t.match(page, /<li>today: 20 \(no limit\);/);
});

t.test('the next minute has room again; a send is refused whole, by its recipients', async (t) => {
  clock.advance(42_600);
  await s.store.customers.setQuotas(cid, { perMinute: 15 });
  const r = await request(url, { key: s.key, body: msg(Array.from({ length: 10 }, (_, i) => `m${i}@q.test`)) });
  t.equal(r.status, 202, 'ten recipients fit a fresh minute');
  const over = await request(url, {
    key: s.key,
    body: msg(Array.from({ length: 10 }, (_, i) => `n${i}@q.test`)),
  });
  expectError(t, over, 429, 'rate_limited');
  t.equal(over.headers.get('retry-after'), '60');
  t.same(over.body.error.details.per_minute, ['15 recipients a minute: 10 used, this send has 10']);
  t.equal((await request(url, { key: s.key, body: msg('one@q.test') })).status, 202, 'a smaller one still fits');
});

t.test('a batch is judged item by item, in order', async (t) => {
  clock.advance(60_000);
  await s.store.customers.setQuotas(cid, { perMinute: 3 });
  const r = await request(`${url}/batch`, {
    key: s.key,
    body: [msg(['b1@q.test', 'b2@q.test']), msg(['b3@q.test', 'b4@q.test']), msg('b5@q.test')],
  });
  t.equal(r.status, 202);
  const d = r.body.data as Json[];
  t.match(d[0], { status: 'queued' });
  t.match(d[1], { error: { code: 'rate_limited', details: { per_minute: Array }, message: /Retry after 60 s/ } });
  t.match(d[2], { status: 'queued' }, 'the third fits what the second left');
});

t.test('per day: Retry-After until midnight UTC; sandbox keys counted apart with their own quota', async (t) => {
  clock.advance(60_000);
  await s.store.customers.setQuotas(cid, { perMinute: 0, perDay: 1 });
  // What the earlier tests accepted today already exceeds 1 a day.
  const r = await request(url, { key: s.key, body: msg('d@q.test') });
  expectError(t, r, 429, 'rate_limited');
  const untilMidnight = Math.ceil((Date.UTC(2026, 10, 29) - clock.now()) / 1000);
  t.equal(r.headers.get('retry-after'), String(untilMidnight));
  t.same(Object.keys(r.body.error.details), ['per_day']);
  const sandbox = await makeKey(s.store, 'sandbox');
  const sb = await Promise.all(
    Array.from({ length: 8 }, (_, i) => request(url, { key: sandbox, body: msg(`s${i}@q.test`) })),
  );
  t.equal(
    sb.filter((x) => x.status === 202).length,
    5,
    'limits.sandbox_send_per_minute, apart from the production use',
  );
  t.same((await s.store.customers.quotaUse(cid, clock.now())).sandbox[0], 5);
});

t.test('SMTP submission answers 451 4.7.1 with the same text', async (t) => {
  const c = await RawSmtp.connect(s.daemon.submission['submission.listen']!.port);
  t.teardown(() => c.close());
  await c.cmd('EHLO app.test');
  await c.startTls({ ca: readFileSync(fixturePath('tls/ca.pem')), servername: 'localhost' });
  await c.cmd('EHLO app.test');
  t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0u\0${s.key}`).toString('base64')}`), /^235 /);
  const r = await c.send(
    'shop@example.com',
    ['smtp@q.test'],
    'From: shop@example.com\r\nTo: smtp@q.test\r\nSubject: q\r\n\r\nx\r\n',
  );
  t.match(
    r.data,
    /^451 4\.7\.1 The customer's send quota \(per_day\) has no room for this send's 1 recipient\(s\); nothing was queued\. Retry after \d+ s\./,
  );
  await s.store.customers.setQuotas(cid, { perDay: 0 });
  const ok = await c.send(
    'shop@example.com',
    ['smtp2@q.test'],
    'From: shop@example.com\r\nTo: smtp2@q.test\r\nSubject: q\r\n\r\nx\r\n',
  );
  t.match(ok.data, /^250 /, 'without the quota it is queued');
});

t.test('customers set and show: bad input changes nothing; show has the use against each quota', async (t) => {
  t.setTimeout(120_000);
  const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);
  await s.store.customers.setQuotas(cid, { perMinute: 7, perDay: null, perMonth: null });
  for (const bad of [['--per-minute', '-1'], ['--per-day', '2.5'], ['--per-month', 'lots'], []]) {
    const r = await cli('customers', 'set', 'default', ...bad);
    t.equal(r.code, 1, `${bad.join(' ') || 'no quota'}: exit 1`);
    t.match(r.stderr, /whole number|at least one/);
  }
  // A good value beside a bad one: nothing of either is written.
  t.equal((await cli('customers', 'set', 'default', '--per-day', '5', '--per-minute', '-3')).code, 1);
  t.same(await s.store.customers.quotas(cid), { perMinute: 7, perDay: null, perMonth: null }, 'nothing changed');
  const unknown = await cli('customers', 'set', 'nobody', '--per-day', '5');
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /no customer named "nobody"/);
  const ok = await cli(
    'customers',
    'set',
    'default',
    '--per-minute',
    '0',
    '--per-day',
    '100000',
    '--per-month',
    'default',
  );
  t.equal(ok.code, 0, ok.stderr);
  t.same(await s.store.customers.quotas(cid), { perMinute: 0, perDay: 100000, perMonth: null });
  const used = (await s.store.customers.quotaUse(cid, Date.now())).live;
  const shown = json<{ quotas: Json[] }>(await cli('customers', 'show', 'default', '--json'));
  t.match(shown.quotas, [
    { quota: 'per_minute', limit: 0, source: 'customer', sandbox_limit: 5 },
    { quota: 'per_day', limit: 100000, source: 'customer', used: used[1] },
    { quota: 'per_month', limit: 0, source: 'default', used: used[2] },
  ]);
  const text = await cli('customers', 'show', 'default');
  t.match(text.stdout, new RegExp(`per_day: ${used[1]} of 100000 \\(customer\\); sandbox`));
});
