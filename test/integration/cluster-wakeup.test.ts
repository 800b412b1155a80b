import pg from 'pg';
import t from 'tap';
import { waitFor } from '../../support/wait.js';
import { clusterSkipped, startCluster } from '../helpers/cluster.js';
import { makeDomain, makeKey } from '../helpers/env.js';
import { request } from '../helpers/http.js';

// Two nodes on one PostgreSQL: a message accepted by one is claimed by the other at once, woken by
// a notification after the commit, not at its next poll (a minute away here); the listening
// connection, cut, comes back by itself.

if (!clusterSkipped()) {
  const cluster = await startCluster({
    mxDomains: ['wake.test'],
    outbound: 'poll_interval = "60s"\n',
    toml: '[metrics]\nenabled = true\nlisten = ""\n[webhooks]\npoll_interval = "60s"\n',
  });
  const { mx, url } = cluster;

  /** A node: a daemon of its own (directory, listeners) on the shared database. */
  const node = (name: string, outbound: string) => cluster.node(name, { outbound });

  t.test('accepted on node a (holding its queue), delivered by node b well before b polls', async (t) => {
    const a = await node('a', 'hold = true\n');
    const nodesStarted = [await node('b', '')];
    const store = await cluster.store();
    const key = await makeKey(store);
    await makeDomain(store, 'example.com');
    t.same(
      (await store.nodes.list()).map((n) => n.name),
      ['a', 'b'],
      'both nodes live',
    );
    // b's first poll, at its start, is over; its next is a minute away.
    await new Promise((r) => setTimeout(r, 500));

    const send = async (to: string) => {
      const started = Date.now();
      const r = await request(`${a.daemon.apiUrl}/api/v1/emails`, {
        key,
        body: { from: 'shop@example.com', to, subject: 'wake', text_body: 'up' },
      });
      t.equal(r.status, 202);
      await waitFor(`${to} at the MX`, () => mx.received.some((m) => m.to.includes(to)), 10_000);
      return Date.now() - started;
    };
    // The first includes b's first lookups and connection to the MX.
    const first = await send('one@wake.test');
    t.ok(first < 15_000, `delivered by b ${first} ms after a accepted it (b polls every 60 s)`);
    const warm = await send('warm@wake.test');
    t.ok(warm < 5_000, `the next, ${warm} ms`);
    t.comment(`wakeup: accepted on a, delivered by b in ${first} ms (first), ${warm} ms (next)`);

    // b's listening connection cut: it comes back by itself and hears the next one.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    t.teardown(() => admin.end());
    const cut = await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [`posthaste b ${process.pid} (listen)`],
    );
    t.equal(cut.rowCount, 1, "b's listening connection terminated");
    await waitFor(
      'b listening again',
      async () =>
        (
          await admin.query(
            'SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
            [`posthaste b ${process.pid} (listen)`],
          )
        ).rowCount === 1,
      10_000,
      50,
    );
    const second = await send('two@wake.test');
    t.ok(second < 5_000, `after the reconnection, delivered by b in ${second} ms`);

    // The store's gauges are the same on every node: one node serves them, so a sum over the
    // nodes counts each recipient once; every node serves its own counters.
    const scrape = async (d: { metricsUrl: string | null; apiUrl: string }) =>
      (await fetch(d.metricsUrl ?? `${d.apiUrl}/metrics`)).text();
    let pages: string[] = [];
    await waitFor('one node serving the store gauges', async () => {
      pages = await Promise.all([scrape(a.daemon), ...nodesStarted.map((d) => scrape(d.daemon))]);
      return pages.filter((p) => /^posthaste_queue_recipients\{state="delivered"\} \d+$/m.test(p)).length === 1;
    });
    t.equal(
      pages.filter((p) => /^posthaste_queue_oldest_age_seconds \d/m.test(p)).length,
      1,
      'the oldest age from one node',
    );
    t.equal(
      pages.filter((p) => /^posthaste_deliveries_total\{outcome="delivered"\} \d+$/m.test(p)).length,
      2,
      "each node's own counters from each",
    );
  });
}
