// One endpoint that hangs must not slow the claims of another: the dispatcher refills each endpoint
// from its own backlog, not from the backlog of all endpoints together.
import t from 'tap';
import { readFileSync } from 'node:fs';
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

t.test('a hanging endpoint holding its whole claim quota does not hold up the refill of another', async (t) => {
  const dns = await new TestDnsServer().start();
  const rx = await new WebhookReceiver().start();
  t.teardown(async () => {
    await Promise.all([dns.stop(), rx.stop()]);
  });
  const db = storeWithKey(t);
  for (const path of ['/hang', '/fast']) {
    const secret = newSecret();
    rx.secrets.set(path, secret);
    createEndpoint(db, { customerId: 1, url: rx.url(path), events: null, description: path, secret, now: 0 });
  }
  rx.script.set('/hang', Array(100).fill('hang'));
  const EVENTS = 30;
  for (let i = 0; i < EVENTS; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data: { n: i }, now: 1 });

  const resolver = createResolver([dns.server]);
  const fetch = new SafeFetch({ resolver, allowPrivate: true, timeoutMs: 4000, extraCa: [readFileSync(fixturePath('tls/ca.pem'), 'utf8')] });
  t.teardown(() => fetch.close());
  const dispatcher = new Dispatcher({
    db,
    clock: systemClock,
    log: silentLogger(),
    service: new WebhookService(db, systemClock, fetch, resolver, true),
    worker: 'fairness',
    concurrency: 10,
    perEndpoint: 2,
    claimPerEndpoint: 8,
    // Far longer than the test: only the refill after each attempt may claim more.
    pollInterval: 600_000,
  });
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
