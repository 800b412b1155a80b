// Scheduled sends, cancellation and tags, end to end: the API holds a message until scheduled_at
// (on a manual clock), DELETE cancels it while nothing has been sent, tags come back in events
// and filter the message list; delivery is to a real SMTP server on loopback.
import t from 'tap';
import { ManualClock } from '../../src/lib/clock.js';
import { getEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { makeKey } from '../helpers/env.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const clock = new ManualClock(Date.now());
const s = await startMailEnv({ mxDomains: ['later.test'], daemon: { clock } });
const { key, mx } = s;
const other = await makeKey(s.store, 'production', 'other');
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const delivered = (to: string) => mx.received.filter((m) => m.to[0] === to).length;

async function send(body: Record<string, unknown>, k = key) {
  return request(`${s.url}/api/v1/emails`, {
    key: k,
    body: { from: 'Shop <shop@example.com>', subject: 'Later', text_body: 'Held.', ...body },
  });
}
const get = (id: string, k = key) => getEmail(s.url, k, id);
const cancel = (id: string, k = key) =>
  request(`${s.url}/api/v1/emails/${encodeURIComponent(id)}`, { key: k, method: 'DELETE' });

t.test('scheduled_at holds the message until then, then it goes', async (t) => {
  const at = clock.now() + 2 * HOUR;
  const r = await send({ to: 'held@later.test', scheduled_at: iso(at) });
  t.equal(r.status, 202);
  t.match(r.body, { status: 'scheduled', scheduled_at: iso(at) });
  await s.daemon.scheduler.drain();
  t.equal(delivered('held@later.test'), 0, 'nothing before the time');
  const m = await get(r.body.message_id);
  t.equal(m.scheduled_at, iso(at));
  t.match(m.recipients[0], { state: 'queued', attempts: 0, next_attempt_at: iso(at) });
  clock.advance(2 * HOUR - 1000);
  await s.daemon.scheduler.drain();
  t.equal(delivered('held@later.test'), 0, 'a second early: still held');
  clock.advance(1000);
  await s.daemon.scheduler.drain();
  t.equal(delivered('held@later.test'), 1, 'sent at the time');
  t.equal((await get(r.body.message_id)).recipients[0].state, 'delivered');
});

t.test('a time already past sends at once; zones are honoured', async (t) => {
  const r = await send({ to: 'past@later.test', scheduled_at: '2020-01-01T00:00:00Z' });
  t.equal(r.body.status, 'queued');
  await s.daemon.scheduler.drain();
  t.equal(delivered('past@later.test'), 1);
  const at = clock.now() + HOUR;
  const local = new Date(at + 2 * HOUR).toISOString().replace('Z', '+02:00'); // the same instant written in +02:00
  const z = await send({ to: 'zone@later.test', scheduled_at: local });
  t.equal(z.body.scheduled_at, iso(at));
});

t.test('scheduled_at is checked: format, and at most limits.max_schedule_ahead (30 days)', async (t) => {
  for (const bad of ['tomorrow', '2026-11-24', '2026-11-24T09:00:00', 1764000000, '2026-13-01T00:00:00Z'])
    expectError(t, await send({ to: 'x@later.test', scheduled_at: bad }), 422, 'validation_failed', String(bad));
  const far = await send({ to: 'x@later.test', scheduled_at: iso(clock.now() + 31 * 24 * HOUR) });
  expectError(t, far, 422, 'validation_failed', '31 days');
  t.match(far.body.error.details.scheduled_at[0], /at most 30d/);
  t.equal(
    (await send({ to: 'x@later.test', scheduled_at: iso(clock.now() + 29 * 24 * HOUR) })).status,
    202,
    '29 days is fine',
  );
});

t.test("DELETE cancels while nothing is sent; never after; never another customer's", async (t) => {
  const r = await send({ to: ['c1@later.test', 'c2@later.test'], scheduled_at: iso(clock.now() + HOUR) });
  const id = r.body.message_id as string;
  expectError(t, await cancel(id, other), 404, 'not_found', "another customer's");
  const c = await cancel(id);
  t.equal(c.status, 200);
  t.same(
    c.body.recipients.map((x: Json) => [x.state, x.next_attempt_at]),
    [
      ['canceled', null],
      ['canceled', null],
    ],
  );
  clock.advance(2 * HOUR);
  await s.daemon.scheduler.drain();
  t.equal(delivered('c1@later.test') + delivered('c2@later.test'), 0, 'a canceled message is never sent');
  t.same((await get(id)).events, [], 'no event: nothing happened to the mail');
  expectError(t, await cancel(id), 409, 'conflict', 'twice');

  const sent = await send({ to: 'gone@later.test' });
  await s.daemon.scheduler.drain();
  const late = await cancel(sent.body.message_id);
  expectError(t, late, 409, 'conflict', 'after delivery');
  t.same(late.body.error.details.recipients, ['1 delivered']);
  expectError(t, await cancel('nosuch@example.com'), 404, 'not_found');

  const list = await request(`${s.url}/api/v1/emails?state=canceled`, { key });
  t.same(
    list.body.data.map((m: Json) => m.message_id),
    [id],
    'the list finds it by state',
  );
});

t.test('tags: up to 10 strings, echoed in every event, filterable', async (t) => {
  expectError(
    t,
    await send({ to: 'x@later.test', tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }),
    422,
    'validation_failed',
    '11 tags',
  );
  expectError(
    t,
    await send({ to: 'x@later.test', tags: ['ok', 'bad\nline'] }),
    422,
    'validation_failed',
    'control character',
  );
  expectError(t, await send({ to: 'x@later.test', tags: 'one' }), 422, 'validation_failed', 'not an array');
  const a = await send({ to: 'tag1@later.test', tags: ['welcome', 'onboarding', 'welcome'] });
  const b = await send({ to: 'tag2@later.test', tags: ['receipt'] });
  await send({ to: 'tag3@later.test' });
  await s.daemon.scheduler.drain();
  const m = await get(a.body.message_id);
  t.same(m.tags, ['welcome', 'onboarding'], 'duplicates dropped, order kept');
  t.same(
    m.events.map((e: Json) => [e.type, e.data.tags]),
    [['email.delivered', ['welcome', 'onboarding']]],
  );
  t.same((await get(b.body.message_id)).events[0].data.tags, ['receipt']);
  const untagged = (await request(`${s.url}/api/v1/emails?recipient=tag3@later.test`, { key })).body.data[0];
  t.same((await get(untagged.message_id)).events[0].data.tags, [], 'an untagged message: an empty list');
  const byTag = await request(`${s.url}/api/v1/emails?tag=welcome`, { key });
  t.same(
    byTag.body.data.map((x: Json) => x.message_id),
    [a.body.message_id],
  );
  t.same((await request(`${s.url}/api/v1/emails?tag=welcome&state=delivered`, { key })).body.data.length, 1);
  t.same((await request(`${s.url}/api/v1/emails?tag=welcome&state=bounced`, { key })).body.data, []);
  t.same(
    (await request(`${s.url}/api/v1/emails?tag=welcome`, { key: other })).body.data,
    [],
    "another customer's tag search sees nothing of this one",
  );
});

t.test('the CLI cancels too', async (t) => {
  const r = await send({ to: 'cli@later.test', scheduled_at: iso(clock.now() + HOUR) });
  const out = await runCli(['--config', s.configPath, 'messages', 'cancel', r.body.message_id, '--json']);
  t.equal(out.code, 0, out.stderr);
  t.same(json(out), { message_id: r.body.message_id, canceled: true });
  const again = await runCli(['--config', s.configPath, 'messages', 'cancel', r.body.message_id]);
  t.equal(again.code, 1);
  t.match(again.stderr, /cannot be canceled: delivery has ended \(1 canceled\)/);
});

t.test('a cancel is the queue delete of what waits: a message tried and deferred is canceled too', async (t) => {
  mx.script = (rcpt) => (rcpt.startsWith('slow@') ? { rcpt: [451, '4.3.0 Try later'] } : undefined);
  t.teardown(() => {
    mx.script = () => undefined;
  });
  const r = await send({ to: ['slow@later.test', 'fast@later.test'] });
  await s.daemon.scheduler.drain();
  const id = r.body.message_id as string;
  t.same(
    (await get(id)).recipients.map((x: Json) => [x.address, x.state]),
    [
      ['slow@later.test', 'deferred'],
      ['fast@later.test', 'delivered'],
    ],
  );
  const out = await runCli(['--config', s.configPath, 'messages', 'cancel', id]);
  t.equal(out.code, 0, out.stderr);
  t.match(out.stdout, /canceled \(1 recipient\(s\)\)/);
  t.same(
    (await get(id)).recipients.map((x: Json) => [x.address, x.state]),
    [
      ['slow@later.test', 'canceled'],
      ['fast@later.test', 'delivered'],
    ],
    'what waited is canceled; the delivered one never changes',
  );
  expectError(t, await cancel(id), 409, 'conflict', 'the API: nothing left');
});
