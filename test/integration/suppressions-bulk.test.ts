import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { json, runCli } from '../helpers/cli.js';
import { customerId, tempDir } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { submissionToml } from '../helpers/submission.js';

// Suppressions in bulk (docs/operations.md, "Suppressions in bulk"), on the test engine: up to
// 1,000 at once through the API, all or none; a whole domain (`@example.com`) refusing every
// address at it, at the API's send and at submission's RCPT TO; a file imported with a report by
// line and exported, the round trip giving the same list.

const s = await startMailEnv({ mxDomains: ['ok.test'], toml: submissionToml() });
const cid = await customerId(s.store);
const url = `${s.url}/api/v1/suppressions`;
const dir = tempDir();
t.teardown(dir.remove);
t.setTimeout(300_000);
const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);
const listed = async (customer = cid) =>
  (await s.store.suppressions.page(customer, undefined, 5000)).map((r) => r.address);

t.test('POST addresses: up to 1,000 at once, each said added or already there', async (t) => {
  const r = await request(url, {
    key: s.key,
    body: { addresses: ['A@ok.test', '@Blocked.test', 'b@ok.test', 'a@ok.test'] },
  });
  t.equal(r.status, 200);
  t.same(r.body, {
    data: [
      { address: 'a@ok.test', reason: 'manual', created: true },
      { address: '@blocked.test', reason: 'manual', created: true },
      { address: 'b@ok.test', reason: 'manual', created: true },
      { address: 'a@ok.test', reason: 'manual', created: false },
    ],
    added: 3,
    already: 1,
  });
  const many = Array.from({ length: 1000 }, (_, i) => `bulk${i}@ok.test`);
  const big = await request(url, { key: s.key, body: { addresses: many } });
  t.equal(big.status, 200);
  t.equal(big.body.added, 1000);
});

t.test('POST addresses: one refused entry refuses them all, naming each by index; over 1,000 refused', async (t) => {
  const before = (await listed()).length;
  const r = await request(url, { key: s.key, body: { addresses: ['fine@ok.test', 'no-at-sign', '@', 7] } });
  expectError(t, r, 422, 'validation_failed');
  t.same(Object.keys(r.body.error.details), ['addresses[1]', 'addresses[2]', 'addresses[3]']);
  t.equal((await listed()).length, before, 'nothing added');
  const over = await request(url, {
    key: s.key,
    body: { addresses: Array.from({ length: 1001 }, (_, i) => `o${i}@ok.test`) },
  });
  expectError(t, over, 422, 'validation_failed');
  expectError(t, await request(url, { key: s.key, body: { addresses: [] } }), 422, 'validation_failed');
  const one = await request(url, { key: s.key, body: { address: '@Whole.test' } });
  t.equal(one.status, 201);
  t.same(one.body, { address: '@whole.test', reason: 'manual', created: true });
});

t.test('a domain on the list refuses every address at it at the send, not its subdomains', async (t) => {
  const send = (to: string) =>
    request(`${s.url}/api/v1/emails`, {
      key: s.key,
      body: { from: 'shop@example.com', to, subject: 's', text_body: 'x' },
    });
  const r = await send('Anyone@BLOCKED.test');
  expectError(t, r, 422, 'recipient_suppressed');
  t.same(r.body.error.details, { to: ['Anyone@blocked.test is on the suppression list (manual)'] });
  t.equal((await send('x@sub.blocked.test')).status, 202, 'a subdomain is not the domain');
});

t.test('SMTP submission refuses an address at a suppressed domain at RCPT TO, the others go', async (t) => {
  const c = await RawSmtp.connect(s.daemon.submission['submission.listen']!.port);
  t.teardown(() => c.close());
  await c.cmd('EHLO app.test');
  await c.startTls({ ca: readFileSync(fixturePath('tls/ca.pem')), servername: 'localhost' });
  await c.cmd('EHLO app.test');
  t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0u\0${s.key}`).toString('base64')}`), /^235 /);
  const r = await c.send(
    'shop@example.com',
    ['who@blocked.test', 'fine@elsewhere.test'],
    'From: shop@example.com\r\nTo: fine@elsewhere.test\r\nSubject: s\r\n\r\nx\r\n',
  );
  t.match(r.rcpt[0], /^550 5\.7\.1 <who@blocked\.test>: on the suppression list \(manual\)/);
  t.match(r.rcpt[1], /^250 /);
  t.match(r.data, /^250 /);
});

t.test('import: a refused line adds nothing unless --skip-refused; the report names each line', async (t) => {
  await s.store.customers.add('other', Date.now());
  const file = join(dir.path, 'list.csv');
  writeFileSync(
    file,
    [
      'address,reason',
      'one@import.test,hard_bounce',
      '',
      '# a comment',
      '"two@import.test",spam_complaint',
      '@imported.test',
      'not an address',
      'three@import.test,bogus',
      'one@import.test',
    ].join('\n'),
  );
  const refused = await cli('suppressions', 'import', file, '--customer', 'other');
  t.equal(refused.code, 1);
  t.match(refused.stdout, /line 7: refused: "not an address"/);
  t.match(refused.stdout, /line 8: refused: the reason "bogus"/);
  t.match(refused.stdout, /nothing was added/);
  const other = (await s.store.customers.find('other'))!.id;
  t.same(await listed(other), [], 'nothing added');
  const ok = await cli('suppressions', 'import', file, '--customer', 'other', '--skip-refused', '--json');
  t.equal(ok.code, 0, ok.stderr);
  t.match(json<Json>(ok), { added: 3, already: 1, refused: [{ line: 7 }, { line: 8 }], applied: true });
  const rows = await s.store.suppressions.page(other, undefined, 10);
  t.same(
    rows.map((r) => [r.address, r.reason]),
    [
      ['@imported.test', 'manual'],
      ['one@import.test', 'hard_bounce'],
      ['two@import.test', 'spam_complaint'],
    ],
  );
  const missing = await cli('suppressions', 'import', join(dir.path, 'nope.txt'));
  t.equal(missing.code, 1);
  t.match(missing.stderr, /cannot read/);
});

t.test('export as CSV and JSON lines; imported into another customer, the same list', async (t) => {
  const csv = await cli('suppressions', 'export');
  t.equal(csv.code, 0, csv.stderr);
  const lines = csv.stdout.trimEnd().split('\n');
  t.equal(lines[0], 'address,reason,created_at,message_id');
  t.equal(lines.length - 1, (await listed()).length);
  t.ok(lines.includes(`@blocked.test,manual,${lines.find((l) => l.startsWith('@blocked.test'))!.split(',')[2]},`));
  const jsonl = await cli('suppressions', 'export', '--format', 'jsonl');
  const objects = jsonl.stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Json);
  t.same(
    objects.map((o) => o.address),
    await listed(),
  );
  t.match(objects[0], { address: String, reason: 'manual', created_at: String, message_id: null });
  await s.store.customers.add('copy', Date.now());
  const file = join(dir.path, 'export.csv');
  writeFileSync(file, csv.stdout);
  const imported = await cli('suppressions', 'import', file, '--customer', 'copy', '--json');
  t.equal(imported.code, 0, imported.stderr);
  t.match(json<Json>(imported), { added: lines.length - 1, already: 0, refused: [] });
  const copy = (await s.store.customers.find('copy'))!.id;
  t.same(await listed(copy), await listed(), 'the round trip gives the same list');
  const bad = await cli('suppressions', 'export', '--format', 'xml');
  t.equal(bad.code, 1);
});
