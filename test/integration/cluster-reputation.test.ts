import t from 'tap';
import { quiet, waitFor } from '../../support/wait.js';
import { runCli } from '../helpers/cli.js';
import { clusterSkipped, startCluster } from '../helpers/cluster.js';
import { makeDomain, makeKey } from '../helpers/env.js';
import { request } from '../helpers/http.js';

// A customer's reputation on three nodes sharing one PostgreSQL (docs/operations.md,
// "Reputation"): its bad list, sent through all three and delivered by all three at the default
// 100 messages a connection, to a loopback MX refusing most of it (550 5.1.1). The customer is
// paused cluster-wide before 300 more of its recipients are attempted, customer.paused fires
// once, every node stops sending its mail while another customer's still goes; what each node
// says it attempted adds up to what the MX saw and to the customer's counters; resumed, the rest
// goes, each recipient once.

if (!clusterSkipped()) {
  const cluster = await startCluster({
    mxDomains: ['list.example', 'good.example'],
    outbound: 'messages_per_connection = 100\n',
    toml: '[metrics]\nenabled = true\nlisten = "127.0.0.1:0"\n',
  });
  const { mx } = cluster;
  const nodes = [await cluster.node('a'), await cluster.node('b'), await cluster.node('c')];
  const store = await cluster.store();
  await makeDomain(store, 'shop.example', { customer: 'shop' });
  await makeDomain(store, 'example.com');
  const shopKey = await makeKey(store, 'production', 'shop');
  const otherKey = await makeKey(store);
  const shopId = (await store.customers.find('shop'))!.id;
  const defaultId = (await store.customers.find('default'))!.id;

  // Seven list addresses in ten do not exist.
  mx.script = (rcpt) => {
    const n = /^u(\d+)@list\.example$/.exec(rcpt);
    return n && Number(n[1]) % 10 < 7 ? { rcpt: [550, `5.1.1 <${rcpt}>: no such user`] } : undefined;
  };
  const listAttempts = () => [...mx.attempts.keys()].filter((a) => a.endsWith('@list.example')).length;
  const goodDelivered = () => mx.received.filter((m) => m.to.some((a) => a.endsWith('@good.example'))).length;
  const sql = cluster.sql();
  const eventCount = (type: string, customerId: number) =>
    sql.value('SELECT count(*) FROM events WHERE type = ? AND customer_id = ?', type, customerId);
  /** What a node's /metrics says it attempted (delivered, bounced, deferred). */
  const attemptedBy = async (n: (typeof nodes)[number]) => {
    const page = await (await fetch(n.daemon.metricsUrl!)).text();
    let sum = 0;
    for (const m of page.matchAll(/^posthaste_deliveries_total\{outcome="(delivered|bounced|deferred)"\} (\d+)$/gm))
      sum += Number(m[2]);
    return sum;
  };
  const total = 900;

  t.test('the bad list through three nodes: paused once, cluster-wide, before 300 more are attempted', async (t) => {
    for (let i = 0; i < total; i += 100) {
      const r = await request(`${nodes[(i / 100) % 3]!.daemon.apiUrl}/api/v1/emails/batch`, {
        key: shopKey,
        body: Array.from({ length: 100 }, (_, j) => ({
          from: 'news@shop.example',
          to: `u${i + j + 1}@list.example`,
          subject: 'Offer',
          text_body: 'Hello',
        })),
      });
      t.equal(r.status, 202, `batch ${i / 100} on node ${nodes[(i / 100) % 3]!.name}`);
    }
    const paused = await waitFor('the shop paused', async () => {
      const s = await store.reputation.standing(shopId);
      return s.state === 'paused' && s;
    });
    t.equal(paused.paused_by, 'reputation');
    await waitFor('every node stopped sending the list', async () => {
      const before = listAttempts();
      await quiet(1500);
      return listAttempts() === before;
    });
    const attempted = listAttempts();
    t.ok(attempted >= 200, `judged once 200 had an outcome (${attempted} attempted)`);
    t.ok(attempted < 200 + 300, `paused before 300 more were attempted (${attempted} attempted)`);
    const byNode = await Promise.all(nodes.map(attemptedBy));
    t.comment(`attempted by a, b, c: ${byNode.join(', ')}; at the MX: ${attempted}`);
    t.ok(byNode.filter((n) => n > 0).length >= 2, 'the list was delivered by several nodes');
    t.equal(
      byNode.reduce((a, b) => a + b, 0),
      attempted,
      'what the nodes say they attempted adds up to what the MX saw',
    );
    const counts = (await store.reputation.counts(shopId, 0)).counts;
    t.equal(counts.rep_outcome, attempted, "the customer's counters: every recipient with an outcome, once");
    t.equal(counts.rep_hard, [...mx.attempts.keys()].filter((a) => /^u\d*[0-6]@/.test(a)).length, 'its hard bounces');
    t.equal(await eventCount('customer.paused', shopId), 1, 'customer.paused once, whichever node judged');

    // Every node is still up and the other customer's mail goes, through each of them.
    for (const [i, n] of nodes.entries()) {
      const r = await request(`${n.daemon.apiUrl}/api/v1/emails`, {
        key: otherKey,
        body: { from: 'a@example.com', to: `g${i}@good.example`, subject: 's', text_body: 'b' },
      });
      t.equal(r.status, 202);
    }
    await waitFor('the other customer delivered', () => goodDelivered() === 3);
    t.equal((await store.reputation.standing(defaultId)).state, 'ok');
    await quiet(1000);
    t.equal(listAttempts(), attempted, 'still nothing more of the list, from any node');
    for (const n of nodes) {
      const refused = await request(`${n.daemon.apiUrl}/api/v1/emails`, {
        key: shopKey,
        body: { from: 'news@shop.example', to: 'x@list.example', subject: 's', text_body: 'b' },
      });
      t.equal(refused.status, 403, `a new send refused on node ${n.name}`);
    }
  });

  t.test('resumed on one node: the rest goes from all of them, each recipient once', async (t) => {
    const before = listAttempts();
    mx.script = () => undefined;
    const resumed = await runCli(['customers', 'resume', 'shop', '--config', nodes[1]!.path]);
    t.equal(resumed.code, 0, resumed.stderr);
    await waitFor('the held mail attempted', () => listAttempts() === total, 60_000, 50);
    t.ok(listAttempts() > before);
    await quiet(1000);
    t.ok(
      [...mx.attempts.values()].every((n) => n === 1),
      'no recipient attempted twice',
    );
    const byNode = await Promise.all(nodes.map(attemptedBy));
    t.equal(
      byNode.reduce((a, b) => a + b, 0),
      total + 3,
      'what the nodes attempted adds up: the list and the three others',
    );
    t.equal(await eventCount('customer.resumed', shopId), 1, 'customer.resumed once');
    t.equal(await eventCount('customer.paused', shopId), 1, 'and not paused again');
  });
}
