import { chmodSync, copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { spawnDaemon } from '../../support/daemon-process.js';
import { waitFor } from '../../support/wait.js';
import { json, runCli } from '../helpers/cli.js';
import { makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import { type Json, request } from '../helpers/http.js';

const dir = tempDir();
t.teardown(dir.remove);
// metrics.listen empty: /metrics on the API listener, as before it had its own (test/integration/metrics.test.ts).
const configPath = writeTestConfig(dir.path, '[metrics]\nenabled = true\nlisten = ""\n[log]\nlevel = "info"\n');
const config = loadConfig({ path: configPath, env: {} });
const store = await openTestStore(config);
const key = await makeKey(store, 'sandbox');
await makeDomain(store, 'example.com');
await store.admin.close();

t.test('status, metrics, online backup, SIGHUP reload and SIGTERM on the running daemon', async (t) => {
  const d = await spawnDaemon(configPath, { POSTHASTE_SERVER_NODE_NAME: 'ops <node>' });
  t.teardown(() => {
    if (d.child.exitCode === null) d.child.kill('SIGKILL');
  });
  for (let i = 0; i < 5; i++)
    t.equal(
      (
        await request(`${d.apiUrl}/api/v1/emails`, {
          key,
          body: { from: 'a@example.com', to: `r${i}@simulator.posthaste.test`, subject: 's', text_body: 'b' },
        })
      ).status,
      202,
    );
  // The sandbox outcomes are recorded by the daemon's own loop.
  const st = await waitFor(
    'five sandbox deliveries recorded',
    async () => {
      const now = json<Json>(await runCli(['--config', configPath, 'status', '--json']));
      return now.recipients.delivered === 5 && now;
    },
    15_000,
    200,
  );
  t.match(st, {
    queue: { queued: 0, deferred: 0, in_flight: 0 },
    recipients: { delivered: 5 },
    messages: 5,
    webhooks: Object,
    inbound: { total: 0 },
  });
  t.match(
    (await runCli(['--config', configPath, 'status'])).stdout,
    /queue: +queued=0 deferred=0 in_flight=0\ndone: +delivered=5\n/,
    'the delivered are done, not queue',
  );
  t.equal(st.nodes.length, 1, 'one node on SQLite');
  t.match(st.nodes[0], {
    name: 'ops <node>',
    id: /^[0-9a-f-]{36}$/,
    pid: d.child.pid,
    lease_ms: 30_000,
    started_at: String,
    heartbeat_at: String,
    claims: { recipients: 0, webhook_deliveries: 0 },
  });
  t.match(
    (await runCli(['--config', configPath, 'status'])).stdout,
    /node: +ops <node> \([0-9a-f-]{36}, pid \d+\) started .*; holds 0 recipients, 0 webhook deliveries/,
  );
  t.match(d.output(), /"node":"ops <node>"/, 'log lines carry the node name');

  const metrics = await fetch(`${d.apiUrl}/metrics`);
  t.equal(metrics.status, 200);
  const text = await metrics.text();
  t.match(text, /posthaste_queue_recipients\{state="delivered"\} 5/);
  t.match(text, /posthaste_api_requests_total\{status="202"\} 5/);
  t.match(
    text,
    new RegExp(`posthaste_node_info\\{node="ops <node>",node_id="${st.nodes[0].id}"\\} 1`),
    'the node, as an info metric',
  );

  const backup = join(dir.path, 'backup.db');
  const b = await runCli(['--config', configPath, 'db', 'backup', backup, '--json']);
  t.equal(b.code, 0, b.stderr);
  const copy = new BetterSqlite3(backup, { readonly: true });
  t.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
  t.equal(copy.prepare('SELECT COUNT(*) FROM messages').pluck().get(), 5, 'a consistent copy while the daemon runs');
  copy.close();
  t.not((await runCli(['--config', configPath, 'db', 'backup', backup])).code, 0, 'never overwrites');

  // SIGHUP: a changed limit and log level apply; a changed listen address needs a restart.
  writeFileSync(
    configPath,
    readFileSync(configPath, 'utf8').replace('level = "info"', 'level = "warn"') + '[inbound]\nrate_per_minute = 7\n',
  );
  d.child.kill('SIGHUP');
  await waitFor('the reload logged', () => d.output().includes('configuration reloaded'));
  t.match(
    d.output(),
    /"applied":\["inbound.rate_per_minute","log.level"\]|"applied":\["log.level","inbound.rate_per_minute"\]/,
  );
  writeFileSync(configPath, readFileSync(configPath, 'utf8') + '[bogus]\nx = 1\n');
  d.child.kill('SIGHUP');
  await waitFor('the refusal logged', () => d.output().includes('reload refused'));
  t.match(d.output(), /reload refused/, 'a bad file is refused and the daemon keeps running');
  t.equal((await fetch(`${d.apiUrl}/healthz`)).status, 200);

  const started = Date.now();
  d.child.kill('SIGTERM');
  const exit = await d.exited;
  t.equal(exit.code, 0, 'SIGTERM exits 0');
  t.ok(Date.now() - started < 30_000, 'within 30 s');
});

t.test('restored from a backup (docs/operations.md), the stopped daemon’s node is not listed as alive', async (t) => {
  writeFileSync(configPath, readFileSync(configPath, 'utf8').replace('[bogus]\nx = 1\n', '')); // the test before's
  // A lease of ten minutes: the backup's heartbeat is well within it when status reads it.
  const env = { POSTHASTE_SERVER_NODE_NAME: 'before-restore', POSTHASTE_CLUSTER_LEASE: '10m' };
  const d = await spawnDaemon(configPath, env);
  t.teardown(() => {
    if (d.child.exitCode === null) d.child.kill('SIGKILL');
  });
  type Nodes = { nodes: Array<{ name: string; pid: number }> };
  const running = json<Nodes>(await runCli(['--config', configPath, 'status', '--json']));
  t.match(running.nodes, [{ name: 'before-restore', pid: d.child.pid }], 'alive while it runs');
  const backup = join(dir.path, 'before-restore.db');
  t.equal((await runCli(['--config', configPath, 'db', 'backup', backup])).code, 0);
  d.child.kill('SIGTERM');
  t.equal((await d.exited).code, 0);

  // The documented restore: the store and its -wal and -shm moved aside, the backup copied in, 0640.
  const data = config.server.data_dir;
  for (const f of ['posthaste.db', 'posthaste.db-wal', 'posthaste.db-shm'])
    if (existsSync(join(data, f))) renameSync(join(data, f), join(data, `${f}.before-restore`));
  copyFileSync(backup, join(data, 'posthaste.db'));
  chmodSync(join(data, 'posthaste.db'), 0o640);
  const copy = new BetterSqlite3(join(data, 'posthaste.db'), { readonly: true });
  t.match(
    copy.prepare('SELECT name, lease_ms, heartbeat_at FROM cluster_nodes').all(),
    [{ name: 'before-restore', lease_ms: 600_000, heartbeat_at: Number }],
    "the backup holds the running daemon's row, its heartbeat within its lease",
  );
  copy.close();

  const st = await runCli(['--config', configPath, 'status']);
  t.equal(st.code, 0, st.stderr);
  t.match(st.stdout, /^nodes: +none running$/m, 'no node listed: none runs');
  t.notMatch(st.stdout, /before-restore/);
  t.same(json<Nodes>(await runCli(['--config', configPath, 'status', '--json'])).nodes, []);

  // Started on the restored store, the daemon is the one node.
  const again = await spawnDaemon(configPath, env);
  t.teardown(() => {
    if (again.child.exitCode === null) again.child.kill('SIGKILL');
  });
  const after = json<Nodes>(await runCli(['--config', configPath, 'status', '--json']));
  t.match(after.nodes, [{ name: 'before-restore', pid: again.child.pid }]);
  t.equal(after.nodes.length, 1);
  again.child.kill('SIGTERM');
  t.equal((await again.exited).code, 0);
});
