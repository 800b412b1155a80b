import tap from 'tap';
import type { ClaimRoom, NodeInfo } from '../../../src/store/model.js';
import type { Store } from '../../../src/store/store.js';
import { released, twoNodes } from '../../helpers/race.js';
import { contract, rawRun, readEvents, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines: nodes register, heartbeat and leave; a node whose
// heartbeat is older than its lease is dead, and releasing frees its claims (recipients and
// webhook deliveries) and those of workers that are no node, never a live node's.

const node = (id: string, leaseMs = 30_000): NodeInfo => ({ id, name: `node-${id}`, pid: 1000, leaseMs });
const unlimited: ClaimRoom = { room: () => 100, take: () => {} };

/** Six due recipients and six due webhook deliveries. */
async function work(s: Store) {
  const who = await sender(s);
  for (let i = 0; i < 6; i++) await send(s, who, { now: 1000 + i });
  for (let i = 0; i < 6; i++) {
    const d = await s.domains.add({ customerId: who.customerId, name: `r${i}.example`, receiving: true, now: 1 });
    await s.inbound.recordLimited(
      { id: d.id, customerId: who.customerId, name: `r${i}.example`, ratePerMinute: null, monthlyLimit: null },
      'rate',
      1,
      10 + i,
    );
  }
  const events = await readEvents(s, 6);
  const endpoint = await s.webhooks.createEndpoint({
    customerId: who.customerId,
    url: 'https://a.example/',
    events: null,
    description: '',
    secret: 's',
    now: 0,
  });
  await s.webhooks.recordAttempts({
    batch: [],
    pending: events.map((e) => ({ endpointId: endpoint.id, eventSeq: e.seq })),
    cursor: null,
    now: 50,
  });
  return { who, endpoint };
}

/** Two claims of each kind for `worker`. */
async function claimTwo(s: Store, worker: string) {
  const recipients = await s.delivery.claim(worker, 10_000, 2);
  let n = 0;
  const two: ClaimRoom = { room: () => 2 - n, take: () => void n++ };
  const deliveries = (await s.webhooks.claim(worker, 10_000, two, [], true))!;
  return { recipients: recipients.map((c) => c.recipient.id), deliveries: deliveries.map((d) => d.id) };
}

contract(
  'a live node and a dead one: releasing frees only the dead one’s claims and those of no node',
  async (t, s) => {
    await work(s);
    const alive = node('a');
    const dead = node('b');
    await s.nodes.register(alive, false);
    await s.nodes.register(dead, false);
    const a = await claimTwo(s, alive.id);
    const b = await claimTwo(s, dead.id);
    const orphan = await claimTwo(s, 'pid4242');
    t.equal(a.recipients.length + b.recipients.length + orphan.recipients.length, 6);
    t.equal(a.deliveries.length + b.deliveries.length + orphan.deliveries.length, 6);

    t.same(
      (await s.nodes.list()).map((n) => [n.name, n.claims.recipients, n.claims.webhook_deliveries]),
      [
        ['node-a', 2, 2],
        ['node-b', 2, 2],
      ],
      'both live, each with its claims',
    );
    t.same(
      await s.nodes.releaseDead(),
      { recipients: 2, webhook_deliveries: 2, nodes: [] },
      'both alive: only the claims of no node are freed',
    );

    // b's last heartbeat a minute ago, twice its lease
    await rawRun(s, 'UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 60000 WHERE id = ?', [dead.id]);
    t.same(
      (await s.nodes.list()).map((n) => n.id),
      [alive.id],
      'a dead node is not listed',
    );
    t.same(
      await s.nodes.releaseDead(),
      { recipients: 2, webhook_deliveries: 2, nodes: [dead.id] },
      "the dead node's claims",
    );
    t.same(await s.nodes.releaseDead(), { recipients: 0, webhook_deliveries: 0, nodes: [] }, 'once');
    const [live] = await s.nodes.list();
    t.same(live!.claims, { recipients: 2, webhook_deliveries: 2 }, "the live node's claims untouched");

    // What was freed is claimed again, and only that: the live node's claims stay its own.
    const again = await claimTwo(s, alive.id);
    const more = await s.delivery.claim(alive.id, 10_000, 10);
    t.same(
      [...again.recipients, ...more.map((c) => c.recipient.id)].sort(),
      [...b.recipients, ...orphan.recipients].sort(),
    );
    const deliveries = [
      ...again.deliveries,
      ...(await s.webhooks.claim(alive.id, 10_000, unlimited, [], true))!.map((d) => d.id),
    ];
    t.same(deliveries.sort(), [...b.deliveries, ...orphan.deliveries].sort());

    // The dead node heartbeats again: its row is written again, and it hears that it had been found dead.
    t.equal(await s.nodes.heartbeat(dead), false, 'found dead meanwhile');
    t.equal(await s.nodes.heartbeat(dead), true);
    t.equal((await s.nodes.list()).length, 2);
  },
);

contract(
  'a node that leaves frees its own claims and its row; a start that holds the store alone removes what a previous run left',
  async (t, s) => {
    await work(s);
    const a = node('a');
    const b = node('b');
    await s.nodes.register(a, false);
    await s.nodes.register(b, false);
    await claimTwo(s, a.id);
    await claimTwo(s, b.id);
    const startedAt = (await s.nodes.list())[0]!.started_at;
    t.ok(Math.abs(Date.parse(startedAt) - Date.now()) < 60_000, "times by the store's clock, now");
    t.equal(await s.nodes.heartbeat(a), true);
    t.same(await s.nodes.leave(a.id), { recipients: 2, webhook_deliveries: 2 });
    t.same(
      (await s.nodes.list()).map((n) => [n.id, n.claims.recipients]),
      [[b.id, 2]],
    );
    const status = await s.admin.status(Date.now());
    t.same(
      status.nodes.map((n) => n.name),
      ['node-b'],
      'status lists the live nodes',
    );

    // One process on the store: what a previous run left is removed at start, and released.
    const c = node('c');
    await s.nodes.register(c, true);
    t.same(
      (await s.nodes.list()).map((n) => n.id),
      [c.id],
    );
    t.same(await s.nodes.releaseDead(), { recipients: 2, webhook_deliveries: 2, nodes: [] });
  },
);

contract('a node does not register while a live node has its name; once that one is dead, it does', async (t, s) => {
  const first: NodeInfo = { id: 'first', name: 'mail-1', pid: 1001, leaseMs: 30_000 };
  const second: NodeInfo = { id: 'second', name: 'mail-1', pid: 1002, leaseMs: 30_000 };
  t.equal(await s.nodes.register(first, false), null, 'registered');
  t.match(
    await s.nodes.register(second, false),
    { id: 'first', name: 'mail-1', pid: 1001, lease_ms: 30_000, heartbeat_at: String },
    'refused, naming the live node of that name',
  );
  t.equal(await s.nodes.register(node('other'), false), null, 'another name goes ahead');
  t.same(
    (await s.nodes.list()).map((n) => n.id),
    ['first', 'other'],
    'the refused node left no row',
  );
  // The first one's process died: its last heartbeat is older than its lease.
  await rawRun(s, 'UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 31000 WHERE id = ?', ['first']);
  t.equal(await s.nodes.register(second, false), null, 'the name of a dead node is taken again (a restart)');
  t.same(
    (await s.nodes.list()).filter((n) => n.name === 'mail-1').map((n) => n.id),
    ['second'],
  );
});

tap.test(
  'postgres: two nodes of one name starting at the same moment: one registers, the other is refused',
  async (t) => {
    const n = await twoNodes(t);
    const a: NodeInfo = { id: 'from-a', name: 'mail-1', pid: 1, leaseMs: 30_000 };
    const b: NodeInfo = { id: 'from-b', name: 'mail-1', pid: 2, leaseMs: 30_000 };
    // Both have looked for a live node of the name, or wait to; the inserts wait on the table's lock.
    const [x, y] = await released(n, 'LOCK TABLE cluster_nodes IN SHARE ROW EXCLUSIVE MODE', 2, () => [
      n.a.nodes.register(a, false),
      n.b.nodes.register(b, false),
    ]);
    const outcomes = [x, y];
    t.equal(outcomes.filter((o) => o === null).length, 1, 'one registers');
    const winner = x === null ? a : b;
    t.match(
      outcomes.find((o) => o !== null),
      { id: winner.id, name: 'mail-1' },
      'the other is told which node has the name',
    );
    t.same(
      (await n.sql.query('SELECT id FROM cluster_nodes')).rows.map((r) => r.id as string),
      [winner.id],
      'one row of that name',
    );
  },
);
