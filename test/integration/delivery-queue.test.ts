import { readFileSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startDaemon } from '../../src/main.js';
import { quiet, WAIT_MS, waitFor } from '../../support/wait.js';
import { getEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import { request } from '../helpers/http.js';
import { mxOfDomain, startMailEnv } from '../helpers/mail-env.js';

const body = (to: string) => ({ from: 'a@example.com', to, subject: 'hi', text_body: 'hello' });

t.test('connections per destination never exceed outbound.concurrency_per_domain', async (t) => {
  const s = await startMailEnv({
    mxDomains: ['many.test'],
    outbound: 'concurrency_per_domain = 2\nmessages_per_connection = 1\n',
    scope: t,
  });
  const { key, mx } = s;
  mx.peakOpen = 0;
  // A slow MX (200 ms per message) keeps connections open long enough to overlap.
  mx.dataDelayMs = 200;
  t.teardown(() => {
    mx.dataDelayMs = 0;
  });
  const before = mx.received.length;
  await Promise.all(
    Array.from({ length: 20 }, (_, i) => request(`${s.url}/api/v1/emails`, { key, body: body(`r${i}@many.test`) })),
  );
  await s.daemon.scheduler.drain();
  t.equal(mx.received.length - before, 20, 'all delivered');
  t.ok(mx.peakOpen <= 2, `at most 2 connections open at the MX (saw ${mx.peakOpen})`);
  t.equal(mx.peakOpen, 2, 'and the limit was used');
  t.equal(s.daemon.scheduler.peakPerDestination.get('many.test'), 2);
});

t.test(
  'a restart mid-queue resumes: claims of the dead process are released, nothing is lost or sent twice',
  async (t) => {
    // Two daemons in turn on one configuration: the daemons are started by hand.
    const { dns, mx } = await mxOfDomain('many.test');
    const dir = tempDir();
    t.teardown(dir.remove);
    const configPath = writeTestConfig(dir.path, `[outbound]\nport = ${mx.port}\n`, dns.server);
    const config = loadConfig({ path: configPath, env: {} });
    const first = await startDaemon(config, silentLogger(), { manualDelivery: true });
    const store = await openTestStore(config);
    const key = await makeKey(store);
    await makeDomain(store, 'example.com');
    const ids: string[] = [];
    for (let i = 0; i < 10; i++)
      ids.push(
        (await request(`${first.apiUrl}/api/v1/emails`, { key, body: body(`restart${i}@many.test`) })).body.message_id,
      );
    // A worker of the first process claimed half of them, then the process died.
    t.equal((await store.delivery.claim('pid-dead', Date.now(), 5)).length, 5);
    await first.stop();
    const before = mx.received.length;
    const second = await startDaemon(config, silentLogger(), { manualDelivery: true });
    t.teardown(async () => {
      await store.admin.close();
      await second.stop();
    });
    await second.scheduler.drain();
    t.equal(mx.received.length - before, 10, 'every message delivered once');
    const got = new Set(mx.received.slice(before).map((m) => m.to[0]));
    t.equal(got.size, 10);
    const states = await store.admin.countsByState('recipients');
    t.same(states, { delivered: 10 });

    // The administrator's view of the same queue, through the built CLI.
    const list = await runCli(['--config', configPath, 'messages', 'list', '--json', '--limit', '3']);
    t.equal(list.code, 0, list.stderr);
    const rows = json<Array<{ message_id: string; states: Record<string, number> }>>(list);
    t.equal(rows.length, 3);
    t.equal(rows[0]!.message_id, ids[9], 'newest first');
    t.same(rows[0]!.states, { delivered: 1 });
    const show = await runCli(['--config', configPath, 'messages', 'show', ids[0]!, '--json']);
    t.match(json(show), {
      message_id: ids[0],
      recipients: [
        {
          address: 'restart0@many.test',
          state: 'delivered',
          attempts: 1,
          next_attempt_at: null,
          last_response: { code: 250 },
        },
      ],
    });
    const human = await runCli(['--config', configPath, 'messages', 'show', ids[0]!]);
    t.match(human.stdout, /restart0@many\.test\s+delivered\s+1/);
    t.match(human.stdout, /email\.delivered/);
    const filtered = json<unknown[]>(
      await runCli(['--config', configPath, 'messages', 'list', '--state', 'deferred', '--json']),
    );
    t.same(filtered, []);
    t.not((await runCli(['--config', configPath, 'messages', 'show', 'nope@example.com'])).code, 0);
  },
);

t.test('the running daemon delivers on its own soon after the 202', async (t) => {
  const s = await startMailEnv({ mxDomains: ['many.test'], daemon: { manualDelivery: false }, scope: t });
  const { key } = s;
  const r = await request(`${s.url}/api/v1/emails`, { key, body: body('live@many.test') });
  t.equal(r.status, 202);
  const m = await waitFor(
    'the daemon to deliver on its own',
    async () => {
      const got = await getEmail(s.url, key, r.body.message_id);
      return got.recipients[0].state === 'delivered' && got;
    },
    10_000,
    50,
  );
  t.equal(m.recipients[0].state, 'delivered');
});

t.test('outbound.hold queues without sending; a reload to false releases the queue', async (t) => {
  const s = await startMailEnv({
    mxDomains: ['many.test'],
    outbound: 'hold = true\npoll_interval = "50ms"\n',
    daemon: { manualDelivery: false },
    scope: t,
  });
  const { key, mx } = s;
  const before = mx.received.length;
  for (let i = 0; i < 3; i++)
    t.equal((await request(`${s.url}/api/v1/emails`, { key, body: body(`held${i}@many.test`) })).status, 202);
  await quiet(400); // several polls of the running loop: nothing may go meanwhile
  t.equal(mx.received.length, before, 'nothing reached the MX while held');
  t.same(
    await s.sql.all('SELECT state, COUNT(*) AS n FROM recipients GROUP BY state'),
    [{ state: 'queued', n: 3 }],
    'all still queued, unclaimed',
  );
  const st = json<{ outbound_held: boolean }>(await runCli(['--config', s.configPath, 'status', '--json']));
  t.equal(st.outbound_held, true, 'status says the queue is held');

  writeFileSync(s.configPath, readFileSync(s.configPath, 'utf8').replace('hold = true', 'hold = false'));
  t.same(s.daemon.reload(loadConfig({ path: s.configPath, env: {} })).applied, ['outbound.hold']);
  // The first deliveries after the release start the signing threads too: on a loaded machine
  // that has taken more than 5 s, so the wait is the helper's generous bound, on the condition.
  await waitFor('the three held messages delivered', () => mx.received.length >= before + 3, WAIT_MS);
  t.equal(mx.received.length - before, 3, 'released: all three delivered');
});
