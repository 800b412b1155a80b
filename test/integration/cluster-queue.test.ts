import t from 'tap';
import { quiet, waitFor } from '../../support/wait.js';
import { runCli } from '../helpers/cli.js';
import { clusterSkipped, startCluster } from '../helpers/cluster.js';
import { makeDomain, makeKey } from '../helpers/env.js';
import { request } from '../helpers/http.js';

// `posthaste queue` on three nodes sharing one PostgreSQL, each polling once a minute: a retry
// after an outage and the release of a held destination reach the MX within 5 s of the command,
// woken by the CLI's notification; a held destination gets nothing from any node meanwhile, and
// nothing is sent twice.

if (!clusterSkipped()) {
  // Each CLI command is a process of its own (1-3 s on a loaded machine).
  t.setTimeout(300_000);
  const cluster = await startCluster({
    mxDomains: ['down.test'],
    outbound: 'poll_interval = "60s"\nretry_schedule = ["1h"]\n',
    toml: '[webhooks]\npoll_interval = "60s"\n',
  });
  const { mx } = cluster;
  let down = true;
  mx.script = () => (down ? { rcpt: [451, '4.3.0 Service unavailable'] } : undefined);
  const nodes = [await cluster.node('a'), await cluster.node('b'), await cluster.node('c')];
  const store = await cluster.store();
  const key = await makeKey(store);
  await makeDomain(store, 'example.com');
  const cli = (...args: string[]) => runCli(['--config', nodes[1]!.path, ...args]);
  const received = (to: string) => mx.received.filter((m) => m.to.includes(to)).length;
  const send = async (i: number, to: string) => {
    const r = await request(`${nodes[i % 3]!.daemon.apiUrl}/api/v1/emails`, {
      key,
      body: { from: 'shop@example.com', to, subject: 'q', text_body: 'q' },
    });
    t.equal(r.status, 202);
  };
  const waiting = async (state: string) => {
    const r = await cli('queue', 'list', '--state', state, '--json');
    return (JSON.parse(r.stdout) as unknown[]).length;
  };

  t.test('after an outage, retry --destination delivers on three nodes within 5 s', async (t) => {
    const to = Array.from({ length: 9 }, (_, i) => `r${i}@down.test`);
    for (const [i, address] of to.entries()) await send(i, address);
    await waitFor('all deferred', async () => (await waiting('deferred')) === to.length);
    down = false;
    const retry = await cli('queue', 'retry', '--destination', 'down.test');
    t.equal(retry.code, 0, retry.stderr);
    t.match(retry.stdout, /^retried 9 recipients/);
    const started = Date.now();
    await waitFor('all delivered', () => to.every((a) => received(a) === 1), 5_000);
    t.comment(`delivered ${Date.now() - started} ms after the command ended`);
    await quiet(500);
    t.ok(
      to.every((a) => received(a) === 1),
      'each once',
    );
  });

  t.test('a held destination gets nothing from any node until released, then within 5 s', async (t) => {
    const hold = await cli('queue', 'hold', '--destination', 'down.test');
    t.equal(hold.code, 0, hold.stderr);
    const to = ['h0@down.test', 'h1@down.test', 'h2@down.test'];
    for (const [i, address] of to.entries()) await send(i, address);
    await waitFor('held at their claims', async () => (await waiting('held')) === to.length);
    t.same(to.map(received), [0, 0, 0], 'nothing sent');
    const release = await cli('queue', 'release', '--destination', 'down.test');
    t.match(release.stdout, /^released 3 recipients\ndown\.test is no longer held/);
    const started = Date.now();
    await waitFor('delivered once released', () => to.every((a) => received(a) === 1), 5_000);
    t.comment(`delivered ${Date.now() - started} ms after the command ended`);
  });
}
