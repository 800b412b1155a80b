import pg from 'pg';
import t, { type Test } from 'tap';
import { CLUSTER_THROTTLE, type DestinationLimits } from '../../../src/domain/destinations.js';
import { systemClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import type { DeliveryItem, GroupResult } from '../../../src/outbound/deliver.js';
import { Scheduler } from '../../../src/outbound/scheduler.js';
import { Throttle, type Ticket } from '../../../src/outbound/throttle.js';
import type { Store } from '../../../src/store/store.js';
import { waitFor } from '../../../support/wait.js';
import { twoNodes } from '../../helpers/race.js';
import { send, sender } from '../../helpers/stores.js';

// outbound.limits_scope = "cluster": a destination's limits hold for all nodes together. Two
// stores on one PostgreSQL play two nodes, each with its own Throttle, deciding as the scheduler
// does (outbound/scheduler.ts, startShared): inside the store's shareDestination, which hands in
// the other nodes' use and stores this node's. PostgreSQL only: SQLite is one process.

const DEST = 'example.net';
const limits: DestinationLimits = { connections: 2, perConnection: 10, perMinute: 30 };
const NOW = 1_800_000_000_000; // 10:00:00 in some minute

/** What one node does in one fill: opens as many connections as the shared limits admit (at most `want`); the tickets. */
async function fill(store: Store, node: string, throttle: Throttle, now: number, want = 10): Promise<Ticket[]> {
  const tickets: Ticket[] = [];
  await store.delivery.shareDestination(DEST, node, (others) => {
    throttle.share(DEST, others, others.throttle);
    for (let i = 0; i < want; i++) {
      const admission = throttle.admit(DEST, now);
      if (admission.kind !== 'open') break;
      tickets.push(throttle.open(DEST, now, admission.messages));
    }
    return throttle.own(DEST, now);
  });
  return tickets;
}

t.test(
  'postgres: with limits_scope = "cluster" two nodes share a destination\'s connections, per_minute and backoff',
  async (t) => {
    const { a, b, sql } = await twoNodes(t, 0);
    const ta = new Throttle(() => limits);
    const tb = new Throttle(() => limits);
    const opened = await fill(a, 'node-a', ta, NOW);
    t.equal(opened.length, 2, "A opens the destination's two connections");
    t.same(await fill(b, 'node-b', tb, NOW), [], "B opens none while A's are open");
    t.same(tb.admit(DEST, NOW), { kind: 'full' });

    ta.close(opened[0]!, { delivered: 10, refusal: null }, NOW + 1000);
    await fill(a, 'node-a', ta, NOW + 1000, 0);
    const b1 = await fill(b, 'node-b', tb, NOW + 1000);
    t.equal(b1.length, 1, 'one closes on A: B may open one');
    t.same(await fill(a, 'node-a', ta, NOW + 1000), [], "and A, deciding next, finds its place taken by B's");
    t.same(ta.admit(DEST, NOW + 1000), { kind: 'full' });

    // per_minute = 30: A started 20 this minute, B 10: spent for both until the minute ends.
    ta.close(opened[1]!, { delivered: 10, refusal: null }, NOW + 2000);
    await fill(a, 'node-a', ta, NOW + 2000, 0);
    t.same(
      await fill(b, 'node-b', tb, NOW + 2000),
      [],
      'a connection free, but the minute is spent on the two nodes together',
    );
    t.match(tb.admit(DEST, NOW + 2000), { kind: 'spent' });

    // A is refused with a 421: B takes the pause over at its next decision.
    const later = NOW + 120_000;
    const [c] = await fill(a, 'node-a', ta, later, 1);
    const change = ta.close(
      c!,
      {
        delivered: 0,
        refusal: { code: 421, enhanced_code: '4.7.0', message: 'slow down', classification: 'rate_limited' },
      },
      later + 10,
    );
    t.equal(change?.kind, 'set');
    if (change?.kind === 'set') await a.delivery.setThrottle(change, later + 10, CLUSTER_THROTTLE);
    await fill(a, 'node-a', ta, later + 10, 0);
    tb.close(b1[0]!, { delivered: 10, refusal: null }, later + 10);
    t.same(await fill(b, 'node-b', tb, later + 20), [], "B opens nothing while the destination pauses for A's refusal");
    t.match(tb.admit(DEST, later + 20), { kind: 'paused', until: later + 10 + 30_000 });
    t.equal(tb.connections(DEST), 1, 'and at the halved connections');

    // A node silent for a minute no longer counts.
    await sql.query(
      "UPDATE destination_use SET open = 1, seen_at = now() - interval '2 minutes' WHERE node = 'node-a'",
    );
    const tc = new Throttle(() => limits);
    t.equal(
      (await fill(b, 'node-c', tc, later + 60_000)).length,
      1,
      "node A's rows past a minute of silence do not hold the destination (one: the throttled connections)",
    );
  },
);

t.test(
  'postgres: limited per node, each node keeps its own throttling of a destination and reads back only its own',
  async (t) => {
    const { a, b } = await twoNodes(t, 0);
    const reason = { code: 421, enhanced_code: '4.7.0', message: 'slow down', classification: 'rate_limited' as const };
    const mine = { destination: DEST, connections: 1, strikes: 1, pausedUntil: NOW + 30_000, reason, since: NOW };
    const theirs = {
      destination: DEST,
      connections: 1,
      strikes: 3,
      pausedUntil: NOW + 120_000,
      reason,
      since: NOW - 60_000,
    };
    await a.delivery.setThrottle({ kind: 'set', record: mine }, NOW, 'node-a');
    await b.delivery.setThrottle({ kind: 'set', record: theirs }, NOW + 1, 'node-b');
    t.same(
      await a.delivery.throttles('node-a'),
      [{ ...mine, node: 'node-a' }],
      "node B's backoff did not write over node A's",
    );
    t.same(await b.delivery.throttles('node-b'), [{ ...theirs, node: 'node-b' }]);
    t.same(await a.delivery.throttles(CLUSTER_THROTTLE), [], 'nothing is shared');
    t.match(
      await a.admin.status(NOW),
      {
        throttled: [
          { destination: DEST, node: 'node-b', refusals: 3 },
          { destination: DEST, node: 'node-a', refusals: 1 },
        ],
      },
      "status lists each node's",
    );
    await b.delivery.setThrottle({ kind: 'cleared', destination: DEST }, NOW + 2, 'node-b');
    t.same(await a.delivery.throttles(), [{ ...mine, node: 'node-a' }], "B's cleared, A's kept");
  },
);

t.test(
  'postgres: two nodes deciding for one destination at once open no more than its connections together',
  async (t) => {
    const { url, a, b, sql } = await twoNodes(t, 0);
    const ta = new Throttle(() => limits);
    const tb = new Throttle(() => limits);
    const gate = new pg.Client({ connectionString: url });
    await gate.connect();
    t.teardown(() => gate.end());
    await gate.query('BEGIN');
    await gate.query("SELECT pg_advisory_xact_lock(hashtextextended('posthaste destination ' || $1, 0))", [DEST]);
    const both = Promise.all([fill(a, 'node-a', ta, NOW), fill(b, 'node-b', tb, NOW)]);
    await waitFor(
      'both nodes waiting for the destination',
      async () =>
        Number(
          (
            await sql.query(
              "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
          ).rows[0].count,
        ) >= 2,
    );
    await gate.query('COMMIT');
    const [x, y] = await both;
    t.equal(x.length + y.length, 2, `${x.length} + ${y.length}: the destination's two connections, not two per node`);
  },
);

/**
 * Two schedulers, one per store, deliver `n` queued messages to one destination through a
 * transport that holds each connection until three are open anywhere or 100 ms have passed; the
 * most connections open at once across both.
 */
async function peakAcrossTwoNodes(t: Test, shared: boolean): Promise<number> {
  const { a, b, sql } = await twoNodes(t, 0);
  const who = await sender(a, 'example.com', Date.now());
  for (let i = 0; i < 16; i++) await send(a, who, { to: [`r${i}@example.net`], now: Date.now() });
  const few: DestinationLimits = { connections: 2, perConnection: 2, perMinute: 0 };
  let open = 0;
  let peak = 0;
  const deliver = async (_domain: string, items: DeliveryItem[]): Promise<GroupResult> => {
    open++;
    peak = Math.max(peak, open);
    const until = Date.now() + 100;
    while (open < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 2));
    open--;
    return {
      results: items.map((item) => ({
        item,
        outcome: {
          kind: 'delivered',
          reply: { code: 250, enhanced_code: '2.0.0', message: 'ok', classification: 'delivered' },
          mx: 'mx',
          tls: false,
          tlsVerified: false,
        },
      })),
      unattempted: [],
      givenBack: [],
      refusal: null,
      composed: new Map(),
    };
  };
  const node = (store: Store, name: string) =>
    new Scheduler({
      store: store.delivery,
      clock: systemClock,
      log: silentLogger(),
      deliver,
      destinationOf: async () => DEST,
      throttle: new Throttle(() => few),
      policy: { retrySchedule: [60_000], maxQueueTime: 3_600_000 },
      concurrency: 10,
      // A few at a time: both nodes get some of the queue.
      claimBatch: 4,
      pollInterval: 10,
      worker: name,
      ...(shared ? { sharedAs: name } : {}),
    });
  const stop = new AbortController();
  const running = [node(a, 'node-a').run(stop.signal), node(b, 'node-b').run(stop.signal)];
  await waitFor(
    'every message delivered',
    async () =>
      Number((await sql.query("SELECT count(*) FROM recipients WHERE state = 'delivered'")).rows[0].count) === 16,
  );
  stop.abort();
  await Promise.all(running);
  return peak;
}

t.test(
  'postgres: two schedulers on one database keep to one destination\'s connections with limits_scope = "cluster", and each to its own with "node"',
  async (t) => {
    t.equal(
      await peakAcrossTwoNodes(t, true),
      2,
      "cluster: at most the destination's two connections open at once, both nodes together",
    );
    t.ok((await peakAcrossTwoNodes(t, false)) > 2, 'node: each node its own two');
  },
);
