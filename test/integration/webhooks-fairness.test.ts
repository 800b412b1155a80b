// One endpoint that hangs must not slow the claims of another: the dispatcher refills each endpoint
// from its own backlog, not from the backlog of all endpoints together.
import t from 'tap';
import { readFileSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { TestDnsServer } from '../helpers/dns-server.js';
import { fixturePath } from '../helpers/fixtures.js';
import { storeWithKey } from '../helpers/env.js';
import { createEndpoint } from '../../src/store/webhooks.js';
import { recordEvent } from '../../src/store/events.js';
import { Dispatcher } from '../../src/webhooks/dispatcher.js';
import { WebhookService } from '../../src/webhooks/service.js';
import { SafeFetch } from '../../src/webhooks/safe-fetch.js';
import { newSecret } from '../../src/webhooks/sign.js';
import { createResolver } from '../../src/lib/dns.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import type { Db } from '../../src/store/db.js';

type DispatcherOptions = Partial<Pick<ConstructorParameters<typeof Dispatcher>[0], 'perEndpoint' | 'claimPerEndpoint' | 'pollInterval'>>;

/**
 * A store with an endpoint per path on a real https receiver (signatures checked), `events`
 * events in the outbox, and a dispatcher over them (not started).
 */
async function setup(t: { teardown(fn: () => unknown): void }, paths: string[], events: number, timeoutMs: number, opts: DispatcherOptions & { beforeDispatcher?: (db: Db) => void }) {
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
  opts.beforeDispatcher?.(db);
  const resolver = createResolver([dns.server]);
  const fetch = new SafeFetch({ resolver, allowPrivate: true, timeoutMs, extraCa: [readFileSync(fixturePath('tls/ca.pem'), 'utf8')] });
  t.teardown(() => fetch.close());
  const dispatcher = new Dispatcher({
    db,
    clock: systemClock,
    log: silentLogger(),
    service: new WebhookService(db, systemClock, fetch, resolver, true),
    worker: 'test',
    concurrency: 10,
    perEndpoint: opts.perEndpoint ?? 2,
    claimPerEndpoint: opts.claimPerEndpoint,
    pollInterval: opts.pollInterval ?? 10,
  });
  return { db, rx, dispatcher };
}

t.test('a hanging endpoint holding its whole claim quota does not hold up the refill of another', async (t) => {
  const EVENTS = 30;
  // A poll interval far longer than the test: only the refill after each attempt may claim more.
  const { rx, dispatcher } = await setup(t, ['/hang', '/fast'], EVENTS, 4000, { perEndpoint: 2, claimPerEndpoint: 8, pollInterval: 600_000 });
  rx.script.set('/hang', Array(100).fill('hang'));
  const stop = new AbortController();
  const running = dispatcher.run(stop.signal);

  const started = Date.now();
  while (rx.on('/fast').length < EVENTS && Date.now() - started < 3000) await new Promise((r) => setTimeout(r, 20));
  t.equal(rx.on('/fast').length, EVENTS, 'the fast endpoint got every event while the other hung on its first two');
  t.ok(rx.on('/fast').every((r) => r.verified), 'signed');
  t.equal(rx.on('/hang').length, 2, 'the hanging endpoint has only its 2 requests in flight');
  stop.abort();
  await running; // the hanging requests time out (4 s) and are recorded for a retry
});

t.test('while another connection holds the write lock, the dispatcher does not block its event loop, and delivers once it is free', async (t) => {
  const EVENTS = 20;
  // The writer thread's commits, played by a second connection that holds the lock for 400 ms.
  let other!: BetterSqlite3.Database;
  const { db, rx, dispatcher } = await setup(t, ['/fast'], EVENTS, 4000, {
    perEndpoint: 4,
    beforeDispatcher: (db) => {
      other = new BetterSqlite3(db.path);
      t.teardown(() => other.close());
      other.prepare('BEGIN IMMEDIATE').run();
    },
  });
  let last = performance.now();
  let worstGap = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    worstGap = Math.max(worstGap, now - last);
    last = now;
  }, 5);
  const stop = new AbortController();
  const running = dispatcher.run(stop.signal);
  await new Promise((r) => setTimeout(r, 400));
  t.equal(rx.on('/fast').length, 0, 'nothing claimed while the lock is held');
  other.prepare('COMMIT').run();
  clearInterval(ticker);
  t.ok(worstGap < 150, `the event loop kept running (worst gap between 5 ms ticks: ${worstGap.toFixed(0)} ms; the busy handler would hold it until the lock is free or busy_timeout, 5 s, passes)`);

  const started = Date.now();
  while (rx.on('/fast').length < EVENTS && Date.now() - started < 3000) await new Promise((r) => setTimeout(r, 20));
  t.equal(rx.on('/fast').length, EVENTS, 'every event delivered once the lock was released');
  t.ok(rx.on('/fast').every((r) => r.verified), 'signed');
  stop.abort();
  await running;
  t.equal(db.sqlite.prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'succeeded'").pluck().get(), EVENTS, 'and recorded');
});

t.test('an endpoint is claimed a few at a time until it succeeds, and again from its first failure on', async (t) => {
  const EVENTS = 40;
  const { db, rx, dispatcher } = await setup(t, ['/flaky'], EVENTS, 800, { perEndpoint: 2, claimPerEndpoint: 30 });
  // Hangs at first, then answers twice, then hangs for good.
  rx.script.set('/flaky', ['hang', 'hang', 200, 200, ...Array<'hang'>(100).fill('hang')]);
  const locked = db.sqlite.prepare('SELECT COUNT(*) FROM webhook_deliveries WHERE locked_by IS NOT NULL').pluck();
  const stop = new AbortController();
  const running = dispatcher.run(stop.signal);
  const until = async (what: string, ok: () => boolean) => {
    const started = Date.now();
    while (!ok() && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 10));
    t.ok(ok(), what);
  };
  await until('two requests hang', () => rx.on('/flaky').length === 2);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(locked.get(), 4, 'no success yet: 2 x perEndpoint claimed (2 in flight, 2 ahead), not the quota of 30');
  await until('the two after the timeouts succeed, and two more hang', () => rx.on('/flaky').length === 6);
  await until('a healthy endpoint gets its quota: 30 claimed', () => locked.get() === 30);
  // The two hanging now time out: failed again, the backlog beyond 2 x perEndpoint goes back.
  await until('after its failure, 4 claimed at most', () => rx.on('/flaky').length >= 8 && (locked.get() as number) <= 4);
  stop.abort();
  await running;
  t.equal(locked.get(), 0, 'all released at stop');
  t.equal(db.sqlite.prepare('SELECT COUNT(*) FROM webhook_deliveries').pluck().get(), EVENTS, 'every event has its delivery');
});
