import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/lib/logger.js';
import { startDaemon } from '../../src/main.js';
import { openStore } from '../../src/store/open.js';
import type { WakeupKind } from '../../src/store/store.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';
import { addPasswordRole, pgBinDir, startPgCluster } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';
import { makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import { request } from '../helpers/http.js';

// Nodes whose PostgreSQL password is in store.password_file (docs/operations.md), against a
// server that checks it (scram-sha-256): every connection, the LISTEN one included, logs in with
// it, so a message accepted by one node is delivered by another at once, not at its next poll. A
// LISTEN connection refused (at the start, or lost and refused again) is retried, each failure
// logged, and the return too.

const PASSWORD = 'w@ke:up/ p%20ss#?';
const ROLE = 'ph_wake';

if (!pgBinDir()) t.pass('PostgreSQL server binaries not installed');
else {
  const cluster = await startPgCluster();
  t.teardown(() => cluster.remove());
  const url = await addPasswordRole(cluster, ROLE, PASSWORD);
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  t.teardown(() => admin.end());
  const setPassword = (p: string) => admin.query(`ALTER ROLE ${ROLE} PASSWORD '${p.replace(/'/g, "''")}'`);
  const listening = async (name: string) =>
    (
      await admin.query('SELECT 1 FROM pg_stat_activity WHERE usename = $1 AND application_name = $2', [
        ROLE,
        `posthaste ${name} ${process.pid} (listen)`,
      ])
    ).rowCount ?? 0;

  const dir = tempDir();
  t.teardown(dir.remove);
  const passwordFile = join(dir.path, 'pg-password');
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  const storeToml = `[store]\nurl = "${url}"\npassword_file = "${passwordFile}"\npool_size = 4\n`;

  const dns = await new TestDnsServer().start();
  const mx = await new TestMx('127.0.0.1').start();
  t.teardown(async () => {
    await dns.stop();
    await mx.stop();
  });
  dns.set('wake.test', { MX: [{ preference: 10, exchange: 'mx.wake.test' }] });
  dns.set('mx.wake.test', { A: ['127.0.0.1'] });

  /** A node with its own directory and its log kept; polls a minute apart. */
  const node = async (name: string, outbound: string) => {
    const home = tempDir();
    t.teardown(home.remove);
    const path = writeTestConfig(
      home.path,
      `[outbound]\nport = ${mx.port}\npoll_interval = "60s"\n${outbound}[webhooks]\npoll_interval = "60s"\n${storeToml}`,
      dns.server,
    );
    const config = loadConfig({ path, env: { POSTHASTE_SERVER_NODE_NAME: name } });
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        cb();
      },
    });
    const daemon = await startDaemon(config, createLogger('info', sink));
    t.teardown(() => daemon.stop());
    return { config, daemon, log: () => lines.map((l) => JSON.parse(l) as { level: number; msg: string }) };
  };

  t.test('two nodes with the password in a file: the wakeup connection logs in and the wakeup arrives', async (t) => {
    const a = await node('a', 'hold = true\n');
    const b = await node('b', '');
    const store = await openTestStore(a.config);
    t.teardown(() => store.admin.close());
    const key = await makeKey(store);
    await makeDomain(store, 'example.com');
    await waitFor('both nodes listening', async () => (await listening('a')) + (await listening('b')) === 2, 10_000);
    await new Promise((r) => setTimeout(r, 500)); // b's first poll, at its start, is over

    // The first includes b's first lookups and connection to the MX; b polls every 60 s.
    for (const [to, within] of [
      ['one@wake.test', 20_000],
      ['two@wake.test', 5_000],
    ] as const) {
      const started = Date.now();
      const r = await request(`${a.daemon.apiUrl}/api/v1/emails`, {
        key,
        body: { from: 'shop@example.com', to, subject: 'wake', text_body: 'up' },
      });
      t.equal(r.status, 202);
      await waitFor(`${to} at the MX`, () => mx.received.some((m) => m.to.includes(to)), within, 20);
      t.comment(`${to}: accepted on a, delivered by b in ${Date.now() - started} ms`);
    }
    for (const [name, n] of [
      ['a', a],
      ['b', b],
    ] as const) {
      const lost = n.log().filter((l) => /wakeups from other nodes/.test(l.msg));
      t.same(lost, [], `node ${name} never lost its wakeups`);
    }
  });

  t.test('a LISTEN connection refused at the start is retried, each failure said, and heard once back', async (t) => {
    const path = writeTestConfig(dir.path, storeToml);
    const config = loadConfig({ path, env: {} });
    const listener = openStore(config, { applicationName: `posthaste x ${process.pid}` });
    const other = openStore(config);
    t.teardown(() => Promise.all([listener.admin.close(), other.admin.close()]));
    t.teardown(() => setPassword(PASSWORD));
    await setPassword('not the one in the file');
    const lost: { at: number; attempt: number; inMs: number; message: string }[] = [];
    let back: number | undefined;
    const heard: WakeupKind[] = [];
    const started = Date.now();
    const wakeups = await listener.wakeups.listen('x', (k) => heard.push(k), {
      lost: (e, r) => lost.push({ at: Date.now() - started, ...r, message: e.message }),
      back: (n) => (back = n),
    });
    t.teardown(() => wakeups.close());
    await waitFor('three failed attempts', () => lost.length >= 3, 10_000, 20);
    await setPassword(PASSWORD);
    await waitFor('back', () => back !== undefined, 15_000, 20);
    t.comment(JSON.stringify(lost));
    t.same(
      lost.slice(0, 3).map((l) => [l.attempt, l.inMs]),
      [
        [0, 500],
        [1, 1000],
        [2, 2000],
      ],
      'the failed start and each failed attempt said, with a wait that doubles',
    );
    t.match(lost[0]!.message, /password authentication failed/, 'the reason: the server refused the password');
    t.notMatch(JSON.stringify(lost), PASSWORD, 'never the password');
    t.equal(back, lost.length - 1, 'back, after that many failed attempts');
    t.equal(await listening('x'), 1, 'listening, as the role with the password');
    t.same(heard.sort(), ['outbound', 'webhooks'], 'on its return, each kind looked at (what was said was not heard)');
    other.wakeups.notify('y', 'webhooks');
    await waitFor('the wakeup from another node', () => heard.length === 3, 5_000, 10);
    t.equal(heard[2], 'webhooks');
  });

  t.test('a node whose LISTEN connection is cut and refused logs each failure, then its return', async (t) => {
    const c = await node('c', '');
    await waitFor('c listening', async () => (await listening('c')) === 1, 10_000);
    t.teardown(() => setPassword(PASSWORD));
    await setPassword('changed meanwhile');
    await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND application_name = $2',
      [ROLE, `posthaste c ${process.pid} (listen)`],
    );
    const said = () => c.log().filter((l) => /wakeups from other nodes/.test(l.msg));
    await waitFor('the loss and two failed attempts logged', () => said().length >= 3, 10_000, 20);
    await setPassword(PASSWORD);
    await waitFor('c listening again', async () => (await listening('c')) === 1, 15_000, 50);
    await waitFor('its return logged', () => said().some((l) => /heard again/.test(l.msg)), 5_000, 20);
    const lines = said();
    t.comment(lines.map((l) => `${l.level} ${l.msg}`).join('\n'));
    t.equal(lines[0]!.level, 40, 'the loss at warn');
    t.match(lines[0]!.msg, /lost \(LISTEN connection\)/);
    t.ok(
      lines.slice(1, -1).every((l) => l.level === 50 && /still lost/.test(l.msg)),
      'each failed attempt at error',
    );
    t.equal(lines.at(-1)!.level, 30, 'the return at info');
    t.notMatch(JSON.stringify(c.log()), PASSWORD, 'the password never in the log');
  });
}
