// POST /api/v1/emails/batch: up to 100 messages, each validated on its own, all stored in one
// transaction, a result per item; Idempotency-Key for the whole batch. Delivered through a real
// SMTP server on loopback like any other message.
import t from 'tap';
import { fullGrant } from '../../src/domain/key-scopes.js';
import { getEmail } from '../helpers/api.js';
import { makeDomain } from '../helpers/env.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const s = await startMailEnv({ mxDomains: ['batch.test'] });
const { mx, key } = s;
await makeDomain(s.store, 'pending.example', { verified: false });
const url = `${s.url}/api/v1/emails/batch`;
const msg = (to: string, extra: Record<string, unknown> = {}) => ({
  from: 'Shop <shop@example.com>',
  to,
  subject: `For ${to}`,
  text_body: 'Hello.',
  ...extra,
});
const count = async () => (await s.sql.value('SELECT COUNT(*) FROM messages')) as number;

t.test('every item accepted: 202 with a message id each, all stored, all delivered', async (t) => {
  const before = await count();
  const r = await request(url, {
    key,
    body: [
      msg('a1@batch.test'),
      msg('a2@batch.test', { cc: 'a3@batch.test' }),
      msg('a4@batch.test', { metadata: { n: '4' } }),
    ],
  });
  t.equal(r.status, 202);
  t.equal(r.body.data.length, 3);
  for (const [i, item] of (r.body.data as Json[]).entries())
    t.match(item, { message_id: /@example\.com$/, status: 'queued', sandbox: false }, `item ${i}`);
  t.same(r.body.data[1].recipients, ['a2@batch.test', 'a3@batch.test']);
  t.equal(new Set(r.body.data.map((d: Json) => d.message_id)).size, 3, 'distinct Message-IDs');
  t.equal(await count(), before + 3);
  const received = mx.received.length;
  await s.daemon.scheduler.drain();
  t.equal(mx.received.length, received + 4, 'each recipient delivered');
  const got = mx.received.find((m) => m.to[0] === 'a4@batch.test')!;
  t.match(got.data.toString(), /Subject: For a4@batch\.test/);
  const view = await getEmail(s.url, key, r.body.data[2].message_id);
  t.same(view.metadata, { n: '4' });
});

t.test('items are validated on their own: the good ones are stored, the bad ones get their error', async (t) => {
  await s.store.suppressions.add({ customerId: 1, address: 'gone@batch.test', reason: 'hard_bounce', now: Date.now() });
  const before = await count();
  const r = await request(url, {
    key,
    body: [
      msg('ok1@batch.test'),
      { from: 'shop@example.com', to: 'x@batch.test' },
      msg('gone@batch.test'),
      { ...msg('p@batch.test'), from: 'a@pending.example' },
      { ...msg('u@batch.test'), from: 'a@unknown.example' },
      'not an object',
      msg('ok2@batch.test'),
    ],
  });
  t.equal(r.status, 202);
  const d = r.body.data as Json[];
  t.equal(d.length, 7);
  t.match(d[0], { message_id: String, status: 'queued' });
  t.match(d[1], { error: { code: 'validation_failed', details: { subject: Array } } }, 'a missing subject');
  t.match(d[2], {
    error: {
      code: 'recipient_suppressed',
      details: { to: ['gone@batch.test is on the suppression list (hard_bounce)'] },
    },
  });
  t.match(d[3], { error: { code: 'domain_not_verified' } });
  t.match(d[4], { error: { code: 'validation_failed', details: { from: [/not a domain of this account/] } } });
  t.match(d[5], { error: { code: 'validation_failed', message: 'A message must be a JSON object.' } });
  t.match(d[6], { message_id: String, status: 'queued' });
  t.equal(await count(), before + 2, 'only the two good ones are stored');
});

t.test('the batch itself: an array of 1 to 100, JSON, a key', async (t) => {
  const before = await count();
  expectError(t, await request(url, { key, body: [] }), 422, 'validation_failed', 'empty');
  expectError(
    t,
    await request(url, { key, body: Array.from({ length: 101 }, (_, i) => msg(`n${i}@batch.test`)) }),
    422,
    'validation_failed',
    '101 items',
  );
  expectError(
    t,
    await request(url, { key, body: msg('o@batch.test') }),
    400,
    'invalid_json',
    'an object, not an array',
  );
  expectError(
    t,
    await request(`${s.url}/api/v1/emails`, { key, body: [msg('o@batch.test')] }),
    400,
    'invalid_json',
    'an array to the single send',
  );
  expectError(t, await request(url, { key, raw: '[{"from":' }), 400, 'invalid_json', 'broken JSON');
  expectError(t, await request(url, { key: null, body: [msg('o@batch.test')] }), 401, 'unauthorized', 'no key');
  t.equal(await count(), before, 'nothing stored by any of them');
  const hundred = await request(url, { key, body: Array.from({ length: 100 }, (_, i) => msg(`h${i}@batch.test`)) });
  t.equal(hundred.status, 202);
  t.equal(hundred.body.data.filter((d: Json) => d.status === 'queued').length, 100, '100 is allowed');
  t.equal(await count(), before + 100);
});

t.test('Idempotency-Key covers the batch: a retry gets the first response, another body 409', async (t) => {
  await s.store.suppressions.add({ customerId: 1, address: 'i3@batch.test', reason: 'manual', now: Date.now() });
  const body = [msg('i1@batch.test'), { nope: true }, msg('i3@batch.test')];
  const headers = { 'idempotency-key': 'batch-0001' };
  const before = await count();
  const first = await request(url, { key, body, headers });
  t.equal(first.status, 202);
  t.match(first.body.data[2], {
    error: { code: 'recipient_suppressed', details: { to: ['i3@batch.test is on the suppression list (manual)'] } },
  });
  const again = await request(url, { key, body, headers });
  t.equal(again.status, 202);
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.same(again.body, first.body, 'the same results, item errors and refusals included');
  t.equal(await count(), before + 1, 'stored once');
  expectError(t, await request(url, { key, body: [msg('i2@batch.test')], headers }), 409, 'conflict');
});

t.test('a revoked key: 401 and nothing stored', async (t) => {
  const k2 = await s.store.keys.create({
    grant: fullGrant(),
    customerId: 1,
    kind: 'production',
    name: 'revoked',
    now: Date.now(),
  });
  t.equal((await request(url, { key: k2.key, body: [msg('r0@batch.test')] })).status, 202, 'works before');
  await s.store.keys.revoke(k2.id, Date.now());
  const before = await count();
  expectError(t, await request(url, { key: k2.key, body: [msg('r1@batch.test')] }), 401, 'unauthorized');
  t.equal(await count(), before);
});
