import t from 'tap';
import { spawnDaemon } from '../../support/daemon-process.js';
import { json, runCli } from '../helpers/cli.js';
import { TEST_ENGINE, tempDir, testStoreUrl, writeTestConfig } from '../helpers/env.js';

// Two daemons given one server.node_name on one PostgreSQL: the second refuses to start, naming
// the live node that has the name, exit 1; once that node's process has died and its lease run
// out, the name is free again (a restart). On SQLite one daemon holds its data directory alone
// (test/integration/first-run.test.ts and the lock's own tests), so no two nodes share a store.

interface NodeJson {
  id: string;
  name: string;
  pid: number;
}

if (TEST_ENGINE !== 'postgres') {
  t.pass('PostgreSQL only (several nodes on one database): run with POSTHASTE_TEST_STORE=postgres');
} else {
  const url = await testStoreUrl(t);
  /** A configuration of its own (directory, listeners) on the shared database, with a lease of 3 s. */
  const configFor = () => {
    const dir = tempDir();
    t.teardown(dir.remove);
    return writeTestConfig(dir.path, '[cluster]\nlease = "3s"\n', undefined, '', undefined, url);
  };
  const name = { POSTHASTE_SERVER_NODE_NAME: 'mail-1' };

  t.test('a second node of one name is refused while the first lives, and takes the name once it died', async (t) => {
    const configA = configFor();
    const configB = configFor();
    const a = await spawnDaemon(configA, name);
    t.teardown(() => {
      if (a.child.exitCode === null) a.child.kill('SIGKILL');
    });
    const [first] = json<{ nodes: NodeJson[] }>(await runCli(['--config', configA, 'status', '--json'])).nodes;
    t.match(first, { name: 'mail-1', pid: a.child.pid });

    const refused = await runCli(['--config', configB, 'serve'], name);
    t.equal(refused.code, 1, 'exit 1');
    t.match(
      refused.stderr,
      new RegExp(
        `^posthaste: server\\.node_name "mail-1" is in use by a live node: mail-1 \\(id ${first!.id}, pid ${a.child.pid}\\), started \\S+Z, last heartbeat \\d{4}-\\d\\d-\\d\\dT\\S+Z; two nodes cannot share a name`,
      ),
      'names the other node and when it was last heard of',
    );
    t.notMatch(refused.stderr, /API on/, 'nothing was served');
    const listed = json<{ nodes: NodeJson[] }>(await runCli(['--config', configA, 'status', '--json'])).nodes;
    t.same(
      listed.map((n) => [n.name, n.id]),
      [['mail-1', first!.id]],
      'one node of that name',
    );

    // The first one's process dies: its row stays until its lease runs out (the store's contract
    // test shows the refusal within it). A restart at once, as systemd makes after a crash, is not
    // refused: it sees the heartbeat stand still, waits for the lease to run out and goes ahead.
    a.child.kill('SIGKILL');
    await a.exited;
    const restartedAt = Date.now();
    const b = await spawnDaemon(configB, name);
    t.ok(Date.now() - restartedAt < 3_000 + 8_000, 'the restart went ahead within the lease and a few seconds');
    t.teardown(() => {
      if (b.child.exitCode === null) b.child.kill('SIGKILL');
    });
    const now = json<{ nodes: NodeJson[] }>(await runCli(['--config', configB, 'status', '--json'])).nodes;
    t.match(now, [{ name: 'mail-1', pid: b.child.pid }], 'the restarted node has the name');
    t.equal(now.length, 1);

    b.child.kill('SIGTERM');
    t.equal((await b.exited).code, 0);
    // Stopped cleanly, it gave its name up at once.
    const again = await spawnDaemon(configA, name);
    again.child.kill('SIGTERM');
    t.equal((await again.exited).code, 0, 'a clean stop frees the name for the next start at once');
  });
}
