import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { ManualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startDaemon } from '../../src/main.js';
import { waitFor } from '../../support/wait.js';
import { sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const rx = await new WebhookReceiver().start();
t.teardown(() => rx.stop());

const clock = new ManualClock(Date.now());
const webhooksToml = `[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`;
const s = await startMailEnv({ mxDomains: ['good.test'], toml: webhooksToml, daemon: { clock } });
const { dns, mx, key } = s;
mx.script = (rcpt) => (rcpt.startsWith('nobody') ? { rcpt: [550, '5.1.1 User unknown'] } : undefined);

async function endpoint(path: string, extraBody: Record<string, unknown> = {}): Promise<Json> {
  const r = await request(`${s.url}/api/v1/webhooks`, { key, body: { url: rx.url(path), ...extraBody } });
  if (r.status !== 201) throw new Error(`create failed ${r.status} ${JSON.stringify(r.body)}`);
  rx.secrets.set(path, r.body.secret);
  return r.body;
}

const send = (to: string) =>
  sendEmail(s.url, key, { from: 'a@example.com', to, subject: 'Hi', text_body: 'x', metadata: { order: '7' } });

async function flush(): Promise<void> {
  await s.daemon.scheduler.drain();
  await s.daemon.dispatcher.drain();
}

const deliveries = async (id: string): Promise<Json[]> =>
  (await request(`${s.url}/api/v1/webhooks/${id}/deliveries?limit=100`, { key })).body.data;

t.test('create, list, show and delete endpoints; the secret is shown once', async (t) => {
  const r = await request(`${s.url}/api/v1/webhooks`, {
    key,
    body: { url: rx.url('/crud'), events: ['email.bounced'], description: 'ops' },
  });
  t.equal(r.status, 201);
  t.same(Object.keys(r.body).sort(), ['created_at', 'description', 'enabled', 'events', 'id', 'secret', 'url']);
  t.match(r.body, { id: /^wh_/, url: rx.url('/crud'), events: ['email.bounced'], enabled: true, secret: /^whsec_/ });
  t.equal(Buffer.from(r.body.secret.slice(6), 'base64').length, 32);
  const list = await request(`${s.url}/api/v1/webhooks`, { key });
  t.ok(list.body.data.some((e: Json) => e.id === r.body.id));
  t.notMatch(JSON.stringify(list.body), r.body.secret, 'no secret in the list');
  const one = await request(`${s.url}/api/v1/webhooks/${r.body.id}`, { key });
  t.equal(one.body.secret, undefined);
  const other = await makeKey(s.store, 'production', 'acme');
  t.equal(
    (await request(`${s.url}/api/v1/webhooks/${r.body.id}`, { key: other })).status,
    404,
    "another customer's key cannot see it",
  );
  const bad = await request(`${s.url}/api/v1/webhooks`, { key, body: { url: 'not a url', events: ['email.nope'] } });
  t.equal(bad.status, 422);
  t.ok(bad.body.error.details.url && bad.body.error.details.events);
  t.equal((await request(`${s.url}/api/v1/webhooks/${r.body.id}`, { key, method: 'DELETE' })).status, 200);
  t.equal((await request(`${s.url}/api/v1/webhooks/${r.body.id}`, { key })).status, 404);
});

t.test('an event from delivery arrives signed per Standard Webhooks', async (t) => {
  const ep = await endpoint('/all');
  const id = await send('bob@good.test');
  await flush();
  const got = rx.on('/all');
  t.equal(got.length, 1);
  const r = got[0]!;
  t.ok(r.verified, 'standardwebhooks verifies the signature');
  t.equal(r.type, 'email.delivered');
  t.match(r.id, /^msg_/);
  t.match(r.headers['user-agent'], /^posthaste\//);
  t.equal(r.headers['content-type'], 'application/json');
  const env = JSON.parse(r.body);
  t.same(Object.keys(env), ['id', 'type', 'timestamp', 'data']);
  t.equal(env.id, r.id, 'webhook-id is the event id');
  t.match(env.data, { message_id: id, recipient: 'bob@good.test', metadata: { order: '7' } });
  const log = await deliveries(ep.id);
  t.match(log[0], {
    event_id: r.id,
    event_type: 'email.delivered',
    attempt: 1,
    status: 200,
    duration_ms: Number,
    response: 'ok',
  });
});

t.test('a 500 is retried 5 s later with the same webhook-id', async (t) => {
  const ep = await endpoint('/flaky');
  rx.script.set('/flaky', [500, 200]);
  await send('carol@good.test');
  await flush();
  t.equal(rx.on('/flaky').length, 1);
  clock.advance(4_000);
  await s.daemon.dispatcher.drain();
  t.equal(rx.on('/flaky').length, 1, 'not before 5 s');
  clock.advance(1_000);
  await s.daemon.dispatcher.drain();
  const [first, second] = rx.on('/flaky');
  t.ok(second, 'retried');
  t.equal(second!.id, first!.id, 'same webhook-id');
  t.equal(second!.timestamp - first!.timestamp, 5, 'new timestamp, 5 s later');
  t.ok(second!.verified);
  const log = await deliveries(ep.id);
  t.same(
    log.map((a: Json) => [a.attempt, a.status]),
    [
      [2, 200],
      [1, 500],
    ],
  );
  t.match(log[1].response, /^status 500 x+$/);
  t.equal(log[1].response.length, 1024, 'the first 1 KiB of the response');
});

t.test('the full retry schedule, then failed', async (t) => {
  const ep = await endpoint('/dead', { events: ['email.bounced'] });
  rx.script.set('/dead', Array(20).fill(503));
  await send('nobody@good.test');
  await flush();
  const delays: number[] = [];
  for (let i = 0; i < 10; i++) {
    const row = (await s.sql.get(
      "SELECT state, next_attempt_at FROM webhook_deliveries WHERE endpoint_id = ? AND kind = 'event'",
      ep.id,
    )) as { state: string; next_attempt_at: number | null };
    if (row.state !== 'pending') break;
    delays.push(row.next_attempt_at! - clock.now());
    clock.set(row.next_attempt_at!);
    await s.daemon.dispatcher.drain();
  }
  t.same(delays, [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000], '5s 5m 30m 2h 5h 10h 10h');
  const log = await deliveries(ep.id);
  t.equal(log.length, 8, 'eight attempts');
  t.equal(log[0].delivery_state, 'failed');
  t.equal(new Set(rx.on('/dead').map((r) => r.id)).size, 1, 'one webhook-id throughout');
  // Back to real time: receivers reject signatures whose timestamp is 5 minutes off their clock.
  clock.set(Date.now());
});

t.test('per-type subscription', async (t) => {
  await endpoint('/bounces-only', { events: ['email.bounced', 'recipient.suppressed'] });
  await send('dave@good.test');
  await send('nobody2@good.test');
  await flush();
  t.same(
    rx
      .on('/bounces-only')
      .map((r) => r.type)
      .sort(),
    ['email.bounced', 'recipient.suppressed'],
  );
});

t.test('replay sends the event again with the same webhook-id', async (t) => {
  const ep = await endpoint('/replay');
  await send('erin@good.test');
  await flush();
  const [orig] = rx.on('/replay');
  const r = await request(`${s.url}/api/v1/webhooks/${ep.id}/deliveries/${orig!.id}/replay`, { key, method: 'POST' });
  t.equal(r.status, 200);
  t.match(r.body, { success: true, status: 200, event_id: orig!.id, duration_ms: Number });
  t.notOk('durationMs' in r.body, 'snake_case like the rest of the API');
  const all = rx.on('/replay');
  t.equal(all.length, 2);
  t.equal(all[1]!.id, orig!.id);
  t.equal(all[1]!.body, orig!.body, 'the same bytes');
  t.ok(all[1]!.verified);
  t.equal(
    (await request(`${s.url}/api/v1/webhooks/${ep.id}/deliveries/msg_nope/replay`, { key, method: 'POST' })).status,
    404,
  );
});

t.test('test event: a sample of the chosen type, answered with the outcome', async (t) => {
  const ep = await endpoint('/test');
  const r = await request(`${s.url}/api/v1/webhooks/${ep.id}/test`, { key, body: { type: 'email.bounced' } });
  t.equal(r.status, 200);
  t.match(r.body, { success: true, status: 200, type: 'email.bounced', event_id: /^msg_/, duration_ms: Number });
  t.notOk('durationMs' in r.body, 'snake_case like the rest of the API');
  const [got] = rx.on('/test');
  t.ok(got!.verified);
  t.match(JSON.parse(got!.body).data, { bounce_type: 'hard', response: { code: 550, classification: String } });
  const def = await request(`${s.url}/api/v1/webhooks/${ep.id}/test`, { key, method: 'POST' });
  t.equal(def.body.type, 'email.delivered', 'default type');
  rx.script.set('/test', [500]);
  const failed = await request(`${s.url}/api/v1/webhooks/${ep.id}/test`, { key, body: {} });
  t.match(failed.body, { success: false, status: 500 });
  t.equal((await request(`${s.url}/api/v1/webhooks/${ep.id}/test`, { key, body: { type: 'nope' } })).status, 422);
});

t.test('410 Gone disables the endpoint', async (t) => {
  const ep = await endpoint('/gone');
  rx.script.set('/gone', [410]);
  await send('frank@good.test');
  await flush();
  const after = await request(`${s.url}/api/v1/webhooks/${ep.id}`, { key });
  t.match(after.body, { enabled: false, disabled_reason: '410 Gone' });
  await send('grace@good.test');
  await flush();
  t.equal(rx.on('/gone').length, 1, 'nothing more is sent');
});

t.test('a receiver that hangs past 10 s is a failure, and does not hold up other endpoints', async (t) => {
  const slow = await endpoint('/hang');
  await endpoint('/fast');
  rx.script.set('/hang', Array(10).fill('hang'));
  for (let i = 0; i < 6; i++) await send(`h${i}@good.test`);
  await s.daemon.scheduler.drain();
  const draining = s.daemon.dispatcher.drain();
  const started = Date.now();
  await waitFor('six requests at /fast', () => rx.on('/fast').length >= 6);
  t.equal(rx.on('/fast').length, 6, 'the fast endpoint got every event while the slow one hung');
  t.ok(Date.now() - started < 5000);
  await draining;
  const log = await deliveries(slow.id);
  t.ok(log.length >= 1);
  t.match(log[0], { status: null, error: /timeout after 10000 ms/ });
  t.ok(log[0].duration_ms >= 9_900);
  t.equal(
    rx.peakOpen.get('/hang'),
    4,
    'at most 4 requests in flight to one endpoint (webhooks.concurrency_per_endpoint)',
  );
});

t.test('a restart between attempts loses nothing', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const path = writeTestConfig(dir.path, `[outbound]\nport = ${mx.port}\n${webhooksToml}`, dns.server);
  const config = loadConfig({ path, env: {} });
  const c2 = new ManualClock(clock.now());
  const a = await startDaemon(config, silentLogger(), { manualDelivery: true, clock: c2 });
  const store = await openTestStore(config);
  const k = await makeKey(store);
  await makeDomain(store, 'example.com');
  const ep = (await request(`${a.apiUrl}/api/v1/webhooks`, { key: k, body: { url: rx.url('/restart') } })).body;
  rx.secrets.set('/restart', ep.secret);
  rx.script.set('/restart', [500, 200]);
  await request(`${a.apiUrl}/api/v1/emails`, {
    key: k,
    body: { from: 'a@example.com', to: 'r@good.test', subject: 's', text_body: 'b' },
  });
  await a.scheduler.drain();
  await a.dispatcher.drain();
  await a.stop();
  c2.advance(5_000);
  const b = await startDaemon(config, silentLogger(), { manualDelivery: true, clock: c2 });
  t.teardown(async () => {
    await store.admin.close();
    await b.stop();
  });
  await b.dispatcher.drain();
  const got = rx.on('/restart');
  t.equal(got.length, 2);
  t.equal(got[1]!.id, got[0]!.id);

  // The administrator's view of the same, through the CLI.
  const list = json<Json[]>(await runCli(['--config', path, 'webhooks', 'list', '--json']));
  t.equal(list[0].id, ep.id);
  const log = json<Json[]>(await runCli(['--config', path, 'webhooks', 'deliveries', ep.id, '--json']));
  t.same(
    log.map((x) => x.status),
    [200, 500],
  );
  const replay = await runCli(['--config', path, 'webhooks', 'replay', ep.id, got[0]!.id, '--json']);
  t.equal(replay.code, 0, replay.stderr);
  t.match(json(replay), { success: true, event_id: got[0]!.id, duration_ms: Number });
  const test = json<Json>(
    await runCli(['--config', path, 'webhooks', 'test', ep.id, '--type', 'email.complained', '--json']),
  );
  t.match(test, { success: true, type: 'email.complained', duration_ms: Number });
  t.notOk('durationMs' in test, 'the --json output is the API view');
  const created = json<Json>(
    await runCli([
      '--config',
      path,
      'webhooks',
      'create',
      rx.url('/cli'),
      '--events',
      'email.delivered,email.bounced',
      '--json',
    ]),
  );
  t.match(created, { url: rx.url('/cli'), events: ['email.delivered', 'email.bounced'], secret: /^whsec_/ });
  t.match(json(await runCli(['--config', path, 'webhooks', 'delete', created.id, '--json'])), { deleted: true });
  t.not((await runCli(['--config', path, 'webhooks', 'delete', created.id])).code, 0);
});
