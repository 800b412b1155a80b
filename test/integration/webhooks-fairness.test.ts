// One endpoint that hangs must not slow the claims of another: the dispatcher refills each endpoint
// from its own backlog, not from the backlog of all endpoints together.

import { readFileSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import t from 'tap';
import { systemClock } from '../../src/lib/clock.js';
import { createResolver } from '../../src/lib/dns.js';
import { silentLogger } from '../../src/lib/logger.js';
import type { Db } from '../../src/store/sqlite/db.js';
import { recordEvent } from '../../src/store/sqlite/events.js';
import { sqliteStore } from '../../src/store/sqlite/index.js';
import { recordAttempts } from '../../src/store/sqlite/webhook-attempts.js';
import { createEndpoint, eventsAfter, fanOutCursor } from '../../src/store/sqlite/webhooks.js';
import { GroupCommit } from '../../src/store/sqlite/writer/group-commit.js';
import { Dispatcher, type DispatcherDeps } from '../../src/webhooks/dispatcher.js';
import { SafeFetch } from '../../src/webhooks/safe-fetch.js';
import { WebhookService } from '../../src/webhooks/service.js';
import { newSecret } from '../../src/webhooks/sign.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { quiet, WAIT_MS, waitFor } from '../../support/wait.js';
import { storeWithKey } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

type DispatcherOptions = Partial<Pick<DispatcherDeps, 'perEndpoint' | 'claimPerEndpoint' | 'pollInterval'>>;

/**
 * A store with an endpoint per path on a real https receiver (signatures checked), `events`
 * events in the outbox, and a dispatcher over them (not started).
 */
async function setup(
  t: { teardown(fn: () => unknown): void },
  paths: string[],
  events: number,
  timeoutMs: number,
  opts: DispatcherOptions & { beforeDispatcher?: (db: Db) => Partial<DispatcherDeps> | undefined },
) {
  const dns = await new TestDnsServer().start();
  const rx = await new WebhookReceiver().start();
  t.teardown(async () => {
    await Promise.all([dns.stop(), rx.stop()]);
  });
  const db = storeWithKey(t);
  for (const path of paths) {
    const secret = newSecret();
    rx.secrets.set(path, secret);
    createEndpoint(db, { customerId: 1, url: rx.url(path), events: null, description: path, secret, now: 0 });
  }
  for (let i = 0; i < events; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data: { n: i }, now: 1 });
  const extra = opts.beforeDispatcher?.(db) ?? {};
  const resolver = createResolver([dns.server]);
  const fetch = new SafeFetch({
    resolver,
    allowPrivate: true,
    timeoutMs,
    extraCa: [readFileSync(fixturePath('tls/ca.pem'), 'utf8')],
  });
  t.teardown(() => fetch.close());
  // The SQLite engine over this store's connection: what it does while another connection holds the lock is what is tested.
  const store = sqliteStore(db).webhooks;
  const deps: DispatcherDeps = {
    store,
    clock: systemClock,
    log: silentLogger(),
    service: new WebhookService(store, systemClock, fetch, resolver, true),
    worker: 'test',
    concurrency: 10,
    perEndpoint: opts.perEndpoint ?? 2,
    claimPerEndpoint: opts.claimPerEndpoint,
    pollInterval: opts.pollInterval ?? 10,
    ...extra,
  };
  return { db, rx, deps, dispatcher: new Dispatcher(deps) };
}

t.test('a hanging endpoint holding its whole claim quota does not hold up the refill of another', async (t) => {
  const EVENTS = 30;
  // A poll interval far longer than the test: only the refill after each attempt may claim more.
  const { rx, dispatcher } = await setup(t, ['/hang', '/fast'], EVENTS, 4000, {
    perEndpoint: 2,
    claimPerEndpoint: 8,
    pollInterval: 600_000,
  });
  rx.script.set('/hang', Array(100).fill('hang'));
  const stop = new AbortController();
  const running = dispatcher.run(stop.signal);

  await waitFor('every event at /fast', () => rx.on('/fast').length >= EVENTS, 3000).catch(() => undefined);
  t.equal(rx.on('/fast').length, EVENTS, 'the fast endpoint got every event while the other hung on its first two');
  t.ok(
    rx.on('/fast').every((r) => r.verified),
    'signed',
  );
  t.equal(rx.on('/hang').length, 2, 'the hanging endpoint has only its 2 requests in flight');
  stop.abort();
  await running; // the hanging requests time out (4 s) and are recorded for a retry
});

t.test(
  'while another connection holds the write lock, the dispatcher does not block its event loop: new events go out, due rows wait',
  async (t) => {
    const EVENTS = 20;
    const ROWS = 5; // the first five events have pending rows (as for an endpoint that was full)
    // A second connection holds the lock for 1.5 s; attempts are recorded through the writer
    // thread, as in the daemon, which waits for the lock on its own thread.
    let other!: BetterSqlite3.Database;
    let commit!: GroupCommit;
    const { db, rx, dispatcher } = await setup(t, ['/fast'], EVENTS, 4000, {
      perEndpoint: 4,
      beforeDispatcher: (db) => {
        const endpointId = db.sqlite.prepare('SELECT id FROM webhook_endpoints').pluck().get() as string;
        const seqs = eventsAfter(db, { x: 0, seq: 0 }, ROWS).map((e) => e.seq);
        db.tx(() =>
          recordAttempts(db, {
            batch: [],
            pending: seqs.map((eventSeq) => ({ endpointId, eventSeq })),
            cursor: { x: 0, seq: seqs[ROWS - 1]! },
            now: 0,
          }),
        );
        other = new BetterSqlite3(db.path);
        t.teardown(() => other.close());
        other.prepare('BEGIN IMMEDIATE').run();
        commit = new GroupCommit(db.path);
        t.teardown(() => commit.close());
        return { record: (input) => commit.submit('webhookAttempts', input) };
      },
    });
    const stop = new AbortController();
    const running = dispatcher.run(stop.signal);
    // From the first request on (the first https connection builds its TLS context, ~150 ms,
    // which is not what this measures): the due rows are tried every millisecond meanwhile.
    await waitFor('the first request at /fast', () => rx.on('/fast').length > 0, WAIT_MS, 5);
    let last = performance.now();
    let worstGap = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      worstGap = Math.max(worstGap, now - last);
      last = now;
    }, 5);
    // Blocked, the loop would stop for the rest of the hold (over a second); a loaded machine
    // (the whole suite runs on two cores) stalls a healthy loop 150 ms and more now and then.
    await quiet(1500); // the lock is held meanwhile
    const during = rx.on('/fast').map((r) => (JSON.parse(r.body) as { data: { n: number } }).data.n);
    t.ok(during.length > 0, `new events went out while the lock was held (${during.length})`);
    t.ok(
      during.every((n) => n >= ROWS),
      'the due rows waited: claiming them needs the lock',
    );
    other.prepare('COMMIT').run();
    clearInterval(ticker);
    t.ok(
      worstGap < 600,
      `the event loop kept running (worst gap between 5 ms ticks: ${worstGap.toFixed(0)} ms; the busy handler would hold it until the lock is free or busy_timeout, 5 s, passes)`,
    );

    await waitFor('every event at /fast', () => rx.on('/fast').length >= EVENTS, 3000).catch(() => undefined);
    t.equal(rx.on('/fast').length, EVENTS, 'every event delivered once the lock was released');
    t.ok(
      rx.on('/fast').every((r) => r.verified),
      'signed',
    );
    stop.abort();
    await running;
    t.equal(
      db.sqlite.prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'succeeded'").pluck().get(),
      EVENTS,
      'and recorded',
    );
  },
);

t.test(
  'an endpoint is given a few deliveries at a time until it succeeds, and again from its first failure on',
  async (t) => {
    const EVENTS = 40;
    const { db, rx, dispatcher } = await setup(t, ['/flaky'], EVENTS, 800, { perEndpoint: 2, claimPerEndpoint: 30 });
    const endpointId = db.sqlite.prepare('SELECT id FROM webhook_endpoints').pluck().get() as string;
    // Hangs at first, then answers twice, then hangs for good.
    rx.script.set('/flaky', ['hang', 'hang', 200, 200, ...Array<'hang'>(100).fill('hang')]);
    const rows = db.sqlite.prepare('SELECT COUNT(*) FROM webhook_deliveries').pluck();
    const stop = new AbortController();
    const running = dispatcher.run(stop.signal);
    const until = async (what: string, ok: () => boolean) => t.ok(await waitFor(what, ok).catch(() => false), what);
    await until('two requests hang', () => rx.on('/flaky').length === 2);
    await quiet(200); // nothing more may be taken meanwhile
    t.equal(
      dispatcher.held(endpointId),
      4,
      'no success yet: 2 x perEndpoint held (2 in flight, 2 ahead), not the quota of 30',
    );
    t.equal(rows.get(), 0, 'the other events wait in the outbox: no rows written for them');
    await until('the two after the timeouts succeed, and two more hang', () => rx.on('/flaky').length === 6);
    await until('a healthy endpoint gets its quota: 30 held', () => dispatcher.held(endpointId) === 30);
    // The two hanging now time out: failed again; what it holds beyond 2 x perEndpoint goes to the store.
    await until(
      'after its failure, 4 held at most',
      () => rx.on('/flaky').length >= 8 && dispatcher.held(endpointId) <= 4,
    );
    await until(
      'the rest written pending',
      () =>
        (db.sqlite
          .prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending' AND attempts = 0")
          .pluck()
          .get() as number) > 20,
    );
    stop.abort();
    await running;
    t.equal(
      db.sqlite.prepare('SELECT COUNT(*) FROM webhook_deliveries WHERE locked_by IS NOT NULL').pluck().get(),
      0,
      'all released at stop',
    );
    const cursor = fanOutCursor(db).seq;
    t.equal(
      db.sqlite
        .prepare(
          'SELECT COUNT(*) FROM events e WHERE e.seq <= ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = e.seq)',
        )
        .pluck()
        .get(cursor),
      0,
      `every event up to the stored cursor (${cursor}) has its delivery row`,
    );
  },
);

t.test(
  'stopped with deliveries held in memory: the stored cursor stays behind them, and a new dispatcher sends each missing one once',
  async (t) => {
    const EVENTS = 40;
    // One event first, so the endpoint is known to answer and gets its whole quota in memory.
    const { db, rx, deps, dispatcher } = await setup(t, ['/slow'], 1, 4000, { perEndpoint: 1, claimPerEndpoint: 50 });
    const cursor = () => fanOutCursor(db).seq;
    const until = (ok: () => boolean) => waitFor('the condition', ok, WAIT_MS, 2).catch(() => undefined);
    const stop = new AbortController();
    const running = dispatcher.run(stop.signal);
    const succeeded = db.sqlite.prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'succeeded'").pluck();
    await until(() => succeeded.get() === 1);
    for (let i = 1; i < EVENTS; i++)
      recordEvent(db, { customerId: 1, type: 'email.delivered', data: { n: i }, now: 1 });
    const seqs = eventsAfter(db, { x: 0, seq: 0 }, EVENTS).map((e) => e.seq);
    await until(() => rx.on('/slow').length >= 6);
    stop.abort();
    await running;
    const first = rx.on('/slow').length;
    t.ok(first < 20, `stopped part way (${first} sent)`);
    const rows = db.sqlite.prepare('SELECT COUNT(*) FROM webhook_deliveries').pluck();
    t.equal(rows.get(), first, 'a row for each attempt made, none for the deliveries held in memory');
    t.ok(cursor() < seqs[first]!, `the cursor (${cursor()}) is behind the first event not sent (${seqs[first]})`);

    const again = new Dispatcher({ ...deps, worker: 'again' });
    const stop2 = new AbortController();
    const running2 = again.run(stop2.signal);
    await until(() => rx.on('/slow').length >= EVENTS);
    await quiet(100); // and no second copy after them
    stop2.abort();
    await running2;
    const ids = rx.on('/slow').map((r) => (JSON.parse(r.body) as { id: string }).id);
    t.equal(ids.length, EVENTS, 'each event sent once in all: none lost, none sent again');
    t.equal(new Set(ids).size, EVENTS);
    t.equal(succeeded.get(), EVENTS);
    t.equal(cursor(), seqs[EVENTS - 1], 'and the cursor is past them all');
  },
);

t.test(
  'after a crash, events past the stored cursor are fanned out again, except to endpoints that have their rows',
  async (t) => {
    const EVENTS = 10;
    const { db, rx, dispatcher } = await setup(t, ['/recorded', '/lost'], EVENTS, 4000, {
      beforeDispatcher: (db) => {
        // As a crash leaves it: the first endpoint's attempts were recorded, the cursor had not moved.
        const endpointId = db.sqlite
          .prepare("SELECT id FROM webhook_endpoints WHERE description = '/recorded'")
          .pluck()
          .get() as string;
        const now = 5;
        const insert = db.sqlite.prepare(
          "INSERT INTO webhook_deliveries (endpoint_id, event_seq, kind, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, 'event', 'succeeded', 1, NULL, ?, ?)",
        );
        for (const e of eventsAfter(db, { x: 0, seq: 0 }, EVENTS)) insert.run(endpointId, e.seq, now, now);
        return undefined;
      },
    });
    const stop = new AbortController();
    const running = dispatcher.run(stop.signal);
    await waitFor('every event at /lost', () => rx.on('/lost').length >= EVENTS).catch(() => undefined);
    await quiet(100); // and none twice
    stop.abort();
    await running;
    t.equal(rx.on('/lost').length, EVENTS, 'the deliveries that had no row: sent');
    t.equal(rx.on('/recorded').length, 0, 'those that had: not sent again');
    t.equal(
      db.sqlite.prepare('SELECT COUNT(*) FROM webhook_deliveries').pluck().get(),
      2 * EVENTS,
      'one row per delivery',
    );
  },
);
