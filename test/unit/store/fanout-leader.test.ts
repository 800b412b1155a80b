import { readFileSync } from 'node:fs';
import pg from 'pg';
import t from 'tap';
import { createResolver } from '../../../src/lib/dns.js';
import type { ClaimRoom, FreshDelivery, SettledAttempt } from '../../../src/store/model.js';
import type { Store } from '../../../src/store/store.js';
import { FanOut } from '../../../src/webhooks/fanout.js';
import { SafeFetch } from '../../../src/webhooks/safe-fetch.js';
import { newSecret } from '../../../src/webhooks/sign.js';
import { TestDnsServer } from '../../../support/dns-server.js';
import { waitFor } from '../../../support/wait.js';
import { nodeDispatcher, twoNodes } from '../../helpers/fanout-nodes.js';
import { fixturePath } from '../../helpers/fixtures.js';
import { WebhookReceiver } from '../../helpers/webhook-receiver.js';

// Several nodes on one PostgreSQL: one fans new events out at a time, the holder of the fan-out's
// lease, and a holder whose lease another node took over (it paused past the lease: a long GC, a
// frozen VM) can neither move the cursor nor create delivery rows. Two stores on one database
// play the two nodes. PostgreSQL only: SQLite is one process (store/open.ts), its fan-out the only one.

const insertEvent = (c: pg.Client, id: string) =>
  c.query(
    "INSERT INTO events (id, customer_id, type, created_at, body) VALUES ($1, 1, 'email.delivered', 1, json_build_object('id', $1::text)::text)",
    [id],
  );

const room: ClaimRoom = { room: () => 100, take: () => undefined };

/** The first attempt of each delivery, succeeded (no row yet: fanned out in memory). */
const succeeded = (held: Array<{ delivery: FreshDelivery }>): SettledAttempt[] =>
  held.map(({ delivery: d }) => ({
    attempt: {
      endpointId: d.endpointId,
      deliveryId: null,
      eventId: d.event.id,
      eventType: d.event.type,
      attempt: 1,
      at: 10,
      status: 200,
      error: null,
      durationMs: 1,
      response: 'ok',
    },
    deliveryId: null,
    eventSeq: d.eventSeq,
    state: 'succeeded',
    nextAt: null,
    disableEndpoint: false,
  }));

/** What a dispatcher does with what it fanned out: attempts it and records the batch; whether the store took the fan-out's writes. */
async function attemptAndRecord(store: Store, fan: FanOut, held: Array<{ delivery: FreshDelivery }>): Promise<boolean> {
  const batch = succeeded(held);
  const w = fan.forBatch(batch)!;
  const ok = await store.webhooks.recordAttempts({
    batch,
    pending: w.pending,
    cursor: w.cursor,
    now: 20,
    ...(w.epoch !== undefined ? { epoch: w.epoch } : {}),
  });
  if (ok) fan.recorded(w);
  else fan.refused();
  return ok;
}

t.test(
  'postgres: a fan-out whose lease was taken over is refused; the new holder fans the same events out once',
  async (t) => {
    const { a, b, sql } = await twoNodes(t);
    const endpoint = await a.webhooks.createEndpoint({
      customerId: 1,
      url: 'https://hook.example/',
      events: null,
      description: '',
      secret: 'whsec_x',
      now: 0,
    });
    for (const id of ['e1', 'e2', 'e3']) await insertEvent(sql, id);
    let deposedA = 0;
    const fa = new FanOut(a.webhooks, () => undefined, {
      holder: 'node-a',
      ttlMs: 60_000,
      onDeposed: () => deposedA++,
    });
    // B asks for the lease every time here (askEveryMs 0), to take it the moment it expires.
    const fb = new FanOut(b.webhooks, () => undefined, {
      holder: 'node-b',
      ttlMs: 60_000,
      askEveryMs: 0,
      onDeposed: () => undefined,
    });
    t.ok(await fa.lead(), 'A takes the lease');
    t.notOk(await fb.lead(), 'B does not, while A holds it');
    const heldA = await fa.next(10, room);
    t.same(
      heldA.map((h) => h.delivery.event.id),
      ['e1', 'e2', 'e3'],
      'A fans the events out in memory',
    );

    // A pauses past its lease; B takes it over.
    await sql.query("UPDATE leader_leases SET expires_at = now() - interval '1 second' WHERE name = 'webhook_fanout'");
    t.ok(await fb.lead(), 'B takes the expired lease');
    const lease = (await sql.query("SELECT holder, epoch::int FROM leader_leases WHERE name = 'webhook_fanout'"))
      .rows[0];
    t.same(lease, { holder: 'node-b', epoch: 2 }, 'with the next epoch');

    // A wakes up and records what it sent, under its old epoch.
    t.equal(await attemptAndRecord(a, fa, heldA), false, "A's fan-out writes are refused");
    t.equal(deposedA, 1, 'and A learns it no longer leads');
    const rows = async () =>
      (
        await sql.query(
          "SELECT event_seq::int, endpoint_id, state FROM webhook_deliveries WHERE kind = 'event' ORDER BY event_seq",
        )
      ).rows;
    t.same(await rows(), [], 'no delivery row from the stale holder');
    t.equal(
      (await sql.query("SELECT value FROM settings WHERE name = 'webhook_fanout_pos'")).rows[0].value,
      '0:0',
      'nor a cursor move',
    );
    t.equal(
      Number((await sql.query('SELECT count(*) FROM webhook_attempts WHERE delivery_id IS NULL')).rows[0].count),
      3,
      'its requests, made, are logged (without a delivery)',
    );

    const heldB = await fb.next(10, room);
    t.same(
      heldB.map((h) => h.delivery.event.id),
      ['e1', 'e2', 'e3'],
      'B fans the same events out from the stored cursor',
    );
    t.equal(await attemptAndRecord(b, fb, heldB), true, "B's writes are taken");
    t.equal((await rows()).length, 3, 'one row per event and endpoint');
    t.ok((await rows()).every((r) => r.endpoint_id === endpoint.id && r.state === 'succeeded'));
    t.same(
      await b.webhooks.fanOutCursor(),
      (await b.webhooks.eventsAfter({ x: 0, seq: 0 }, 10)).at(-1)!.pos,
      'the cursor past them',
    );
    t.notOk(await fa.lead(), "A cannot take the lease back while B's runs");
    // A, not leading, does not ask again for ASK_EVERY_MS however often it is woken.
    let asked = 0;
    const counting = {
      ...a.webhooks,
      leadFanOut: (h: string, ttl: number) => {
        asked++;
        return a.webhooks.leadFanOut(h, ttl);
      },
    };
    const fc = new FanOut(counting, () => undefined, { holder: 'node-c', ttlMs: 60_000, onDeposed: () => undefined });
    const answers: boolean[] = [];
    for (let i = 0; i < 50; i++) answers.push(await fc.lead());
    t.same(new Set(answers), new Set([false]), 'B leads throughout');
    t.equal(asked, 1, 'fifty wakeups, one question to the store');
    t.same(await fb.next(10, room), [], 'and B has nothing left to fan out');
  },
);

t.test('postgres: a takeover waits for the batch the old holder is committing, then reads what it wrote', async (t) => {
  const { url, a, b, sql } = await twoNodes(t);
  t.equal(await a.webhooks.leadFanOut('node-a', 60_000), 1);
  // The lease runs out while A is between the check and the commit of a batch (the check's lock
  // is what a batch takes first: SELECT ... FOR SHARE on the lease's row at its epoch).
  await sql.query("UPDATE leader_leases SET expires_at = now() - interval '1 second' WHERE name = 'webhook_fanout'");
  const batch = new pg.Client({ connectionString: url });
  await batch.connect();
  t.teardown(() => batch.end());
  await batch.query('BEGIN');
  t.equal(
    (await batch.query("SELECT 1 FROM leader_leases WHERE name = 'webhook_fanout' AND epoch = 1 FOR SHARE")).rowCount,
    1,
    "A's batch finds its epoch: nobody else has written",
  );
  await batch.query("UPDATE settings SET value = '0:7' WHERE name = 'webhook_fanout_pos'");
  let took: number | null | undefined;
  const taking = b.webhooks.leadFanOut('node-b', 60_000).then((e) => (took = e));
  await waitFor(
    'the takeover to wait for the lock',
    async () =>
      (
        await sql.query(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%leader_leases%'",
        )
      ).rowCount === 1,
  );
  t.equal(took, undefined, 'B waits');
  await batch.query('COMMIT');
  await taking;
  t.equal(took, 2, 'then takes the lease with the next epoch');
  t.same(await b.webhooks.fanOutCursor(), { x: 0, seq: 7 }, "and reads the cursor A's batch left");
});

t.test(
  'postgres: two dispatchers on one database, events written by concurrent transactions, the leader stopped midway: each event delivered once',
  async (t) => {
    const { url, a, b } = await twoNodes(t);
    const dns = await new TestDnsServer().start();
    const rx = await new WebhookReceiver().start();
    t.teardown(async () => {
      await Promise.all([dns.stop(), rx.stop()]);
    });
    const secret = newSecret();
    rx.secrets.set('/hook', secret);
    await a.webhooks.createEndpoint({
      customerId: 1,
      url: rx.url('/hook'),
      events: null,
      description: '',
      secret,
      now: 0,
    });
    const resolver = createResolver([dns.server]);
    const fetch = new SafeFetch({
      resolver,
      allowPrivate: true,
      timeoutMs: 5000,
      extraCa: [readFileSync(fixturePath('tls/ca.pem'), 'utf8')],
    });
    t.teardown(() => fetch.close());
    const node = (store: Store, name: string) => nodeDispatcher(store, name, { fetch, resolver, pollInterval: 10 });
    const nodes = { 'node-a': node(a, 'node-a'), 'node-b': node(b, 'node-b') };
    const stops = { 'node-a': new AbortController(), 'node-b': new AbortController() };
    const running = Object.entries(nodes).map(([name, d]) => d.run(stops[name as keyof typeof stops].signal));

    // Three writers; one holds a transaction open across the others' commits (its events have the
    // lower sequence numbers and commit last: a seq cursor would lose them).
    const writers = await Promise.all(
      [0, 1, 2].map(async () => {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        return c;
      }),
    );
    t.teardown(() => Promise.all(writers.map((c) => c.end())));
    const [slow, w1, w2] = writers as [pg.Client, pg.Client, pg.Client];
    const ids: string[] = [];
    const write = async (c: pg.Client, id: string) => {
      ids.push(id);
      await insertEvent(c, id);
    };
    await slow.query('BEGIN');
    await write(slow, 'slow-0');
    for (let i = 0; i < 40; i++) {
      await w1.query('BEGIN');
      await write(w1, `w1-${i}`);
      await write(w2, `w2-${i}`);
      await write(w1, `w1-${i}b`);
      await w1.query('COMMIT');
      if (i === 20) await write(slow, 'slow-1');
    }
    await slow.query('COMMIT');
    const got = () =>
      new Set(rx.received.filter((r) => r.path === '/hook').map((r) => JSON.parse(r.body).id as string)).size;
    await waitFor('half the events delivered', () => got() >= ids.length / 2);

    // The leader stops (its batches settle, it gives the lease up); the other takes it over.
    const holder = await waitFor('the lease holder', async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        return (await c.query("SELECT holder FROM leader_leases WHERE name = 'webhook_fanout' AND expires_at > now()"))
          .rows[0]?.holder as string | undefined;
      } finally {
        await c.end();
      }
    });
    stops[holder as keyof typeof stops].abort();
    await running[holder === 'node-a' ? 0 : 1];
    for (let i = 0; i < 20; i++) await write(w2, `after-${i}`);
    await waitFor('every event delivered', () => got() >= ids.length);
    const other = holder === 'node-a' ? 'node-b' : 'node-a';
    stops[other].abort();
    await Promise.all(running);

    const bodies = rx.received.filter((r) => r.path === '/hook').map((r) => JSON.parse(r.body) as { id: string });
    t.equal(bodies.length, ids.length, `${ids.length} events, ${bodies.length} requests: none twice`);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    t.teardown(() => c.end());
    const rows = (
      await c.query(
        "SELECT count(*)::int AS n, count(DISTINCT event_seq)::int AS events FROM webhook_deliveries WHERE kind = 'event' AND state = 'succeeded'",
      )
    ).rows[0];
    t.same(rows, { n: ids.length, events: ids.length }, 'one succeeded row per event');
  },
);
