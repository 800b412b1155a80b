import pg from 'pg';
import t from 'tap';
import { quotaWindows } from '../../src/domain/quotas.js';
import { ManualClock } from '../../src/lib/clock.js';
import { clusterSkipped, startCluster } from '../helpers/cluster.js';
import { customerId, makeDomain, makeKey } from '../helpers/env.js';
import { request } from '../helpers/http.js';

// A send quota shared by the nodes on one PostgreSQL (docs/operations.md, "Send quotas"): sends
// arriving at three nodes at once, against 20 recipients a minute, get exactly 20 accepted between
// them; the rest hear 429 with the same Retry-After.

if (!clusterSkipped()) {
  const cluster = await startCluster({ outbound: 'hold = true\n' });
  const { url } = cluster;
  const clock = new ManualClock(Date.UTC(2026, 10, 28, 12, 0, 30, 0));
  const node = (name: string) => cluster.node(name, { daemon: { clock, manualDelivery: true } });

  t.test('three nodes, 90 concurrent sends, 20 a minute: exactly 20 accepted in all', async (t) => {
    const nodes = [await node('a'), await node('b'), await node('c')];
    const store = await cluster.store();
    const key = await makeKey(store);
    await makeDomain(store, 'example.com');
    const cid = await customerId(store);
    await store.customers.setQuotas(cid, { perMinute: 20 });
    const rs = await Promise.all(
      Array.from({ length: 90 }, (_, i) =>
        request(`${nodes[i % 3]!.daemon.apiUrl}/api/v1/emails`, {
          key,
          body: { from: 'shop@example.com', to: `r${i}@q.test`, subject: 's', text_body: 'x' },
        }),
      ),
    );
    t.equal(rs.filter((r) => r.status === 202).length, 20, 'exactly the quota, across the nodes');
    t.ok(
      rs.every((r) => r.status === 202 || (r.status === 429 && r.headers.get('retry-after') === '30')),
      'the others 429, Retry-After 30',
    );
    t.same((await store.customers.quotaUse(cid, clock.now())).live, [20, 20, 20]);
    const stored = await store.messages.search({ customerId: cid, limit: 100 });
    t.equal(stored.length, 20);
  });

  t.test('a send waits for a transaction that is counting the same customer, then sees its count', async (t) => {
    clock.advance(60_000);
    const store = await cluster.store();
    const key = await makeKey(store);
    const cid = await customerId(store);
    // Another node's accept, caught mid-transaction: 20 recipients counted, not yet committed.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    t.teardown(() => other.end());
    const w = quotaWindows(clock.now()).map((x) => x.key);
    await other.query('BEGIN');
    const judged = await other.query('SELECT * FROM posthaste_send_quota($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)', [
      [1],
      [cid],
      [0],
      [20],
      [0],
      [0],
      [0],
      [w[0]],
      [w[1]],
      [w[2]],
    ]);
    t.equal(judged.rowCount, 0, 'the 20 fit');
    let answered = false;
    const sent = request(`${(await node('e')).daemon.apiUrl}/api/v1/emails`, {
      key,
      body: { from: 'shop@example.com', to: 'late@q.test', subject: 's', text_body: 'x' },
    }).finally(() => (answered = true));
    await new Promise((r) => setTimeout(r, 500));
    t.notOk(answered, 'the send waits for the lock the other transaction holds');
    await other.query('COMMIT');
    const r = await sent;
    t.equal(r.status, 429, 'and then counts what it committed');
    t.equal(r.headers.get('retry-after'), '30');
  });
}
