import t from 'tap';
import { ManualClock } from '../../src/lib/clock.js';
import { sendEmail } from '../helpers/api.js';
import { fixturePath } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// /metrics as an operator scrapes it: on its own listener, named as Prometheus asks, with Node's
// process metrics, histograms of API latency, time to delivery and webhook attempts, the queue's
// age, and every known series there at 0 before the first event.

const rx = await new WebhookReceiver().start();
t.teardown(() => rx.stop());

const clock = new ManualClock(Date.now());
const s = await startMailEnv({
  mxDomains: ['good.test'],
  toml: `[metrics]\nenabled = true\nlisten = "127.0.0.1:0"\n[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
  daemon: { clock },
});
const { key } = s;

async function scrape(): Promise<string> {
  // (The API listener's /metrics when there is no other: what a build without metrics.listen serves.)
  const r = await fetch(s.daemon.metricsUrl ?? `${s.url}/metrics`);
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  return r.text();
}

/** The value of one series line, e.g. value(text, 'posthaste_deliveries_total{outcome="delivered"}'). */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test('its own listener: /metrics there, not on the API listener', async (t) => {
  t.match(s.daemon.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  t.not(new URL(s.daemon.metricsUrl!).port, new URL(s.url).port);
  t.equal((await request(`${s.url}/metrics`)).status, 404, 'the API listener no longer serves it');
  t.equal((await fetch(s.daemon.metricsUrl!.replace('/metrics', '/other'))).status, 404);
  t.equal((await fetch(s.daemon.metricsUrl!, { method: 'POST' })).status, 405);
});

t.test('before anything happened: process metrics, and every known series at 0', async (t) => {
  const text = await scrape();
  for (const name of [
    'process_cpu_user_seconds_total',
    'process_resident_memory_bytes',
    'nodejs_heap_size_used_bytes',
    'nodejs_eventloop_lag_seconds',
  ])
    t.ok(value(text, name) !== undefined, `${name}: Node's process metrics`);
  for (const outcome of ['success', 'failure', 'gone']) {
    t.equal(
      value(text, `posthaste_webhook_attempts_total{outcome="${outcome}"}`),
      0,
      `webhook attempts ${outcome} at 0`,
    );
    t.equal(
      value(text, `posthaste_webhook_attempt_duration_seconds_count{outcome="${outcome}"}`),
      0,
      `webhook duration ${outcome} at 0`,
    );
  }
  for (const state of ['pending', 'succeeded', 'failed'])
    t.equal(value(text, `posthaste_webhook_deliveries{state="${state}"}`), 0);
  for (const state of ['queued', 'deferred', 'delivered', 'bounced'])
    t.equal(value(text, `posthaste_queue_recipients{state="${state}"}`), 0);
  t.equal(value(text, 'posthaste_deliveries_total{outcome="delivered"}'), 0);
  t.equal(value(text, 'posthaste_time_to_delivery_seconds_count'), 0);
  t.equal(value(text, 'posthaste_queue_oldest_age_seconds'), 0, 'an empty queue has no age');
  // Prometheus' naming: every counter ends in _total, every histogram and duration in _seconds.
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'counter') t.match(name, /_total$/, `${name} is a counter`);
    if (type === 'histogram' && name!.startsWith('posthaste_')) t.match(name, /_seconds$/, `${name} is in seconds`);
  }
});

t.test('after a delivery and a webhook: the histograms have counts, the queue had an age', async (t) => {
  const hook = await request(`${s.url}/api/v1/webhooks`, {
    key,
    body: { url: rx.url('/m'), events: ['email.delivered'] },
  });
  t.equal(hook.status, 201);
  await sendEmail(s.url, key, { from: 'a@example.com', to: 'r@good.test', subject: 's', text_body: 'b' });
  // Scheduled for later: not waiting yet, so it does not age the queue.
  await sendEmail(s.url, key, {
    from: 'a@example.com',
    to: 'later@good.test',
    subject: 's',
    text_body: 'b',
    scheduled_at: new Date(clock.now() + 86_400_000).toISOString(),
  });
  clock.advance(90_000);
  t.equal(
    value(await scrape(), 'posthaste_queue_oldest_age_seconds'),
    90,
    'the oldest queued recipient has waited 90 s',
  );
  await s.daemon.scheduler.drain();
  await s.daemon.dispatcher.drain();
  const text = await scrape();
  t.equal(value(text, 'posthaste_deliveries_total{outcome="delivered"}'), 1);
  t.equal(value(text, 'posthaste_time_to_delivery_seconds_count'), 1, 'time to delivery: one recipient');
  t.equal(value(text, 'posthaste_time_to_delivery_seconds_sum'), 90, 'from acceptance, on the clock');
  t.equal(value(text, 'posthaste_time_to_delivery_seconds_bucket{le="60"}'), 0);
  t.equal(value(text, 'posthaste_time_to_delivery_seconds_bucket{le="300"}'), 1);
  t.equal(
    value(text, 'posthaste_queue_oldest_age_seconds'),
    0,
    'only the scheduled message is left, and it is not due',
  );
  t.equal(value(text, 'posthaste_webhook_attempts_total{outcome="success"}'), 1);
  t.equal(
    value(text, 'posthaste_webhook_attempt_duration_seconds_count{outcome="success"}'),
    1,
    'webhook attempt latency',
  );
  t.equal(
    value(text, 'posthaste_webhook_attempt_duration_seconds_bucket{le="10",outcome="success"}'),
    1,
    'within the timeout',
  );
  const sent = 'posthaste_api_request_duration_seconds_count{route="/api/v1/emails",status_class="2xx"}';
  t.equal(value(text, sent), 2, 'API latency by route pattern and status class');
  t.equal(value(text, 'posthaste_api_request_duration_seconds_count{route="/api/v1/webhooks",status_class="2xx"}'), 1);
  t.equal(
    value(text, 'posthaste_api_request_duration_seconds_bucket{route="/api/v1/emails",status_class="2xx",le="+Inf"}'),
    2,
  );
  t.ok(value(text, 'posthaste_api_request_duration_seconds_sum{route="/api/v1/emails",status_class="2xx"}')! > 0);
  await request(`${s.url}/api/v1/emails/nope`, { key });
  await request(`${s.url}/no/such/route`, { key });
  const after = await scrape();
  t.equal(
    value(after, 'posthaste_api_request_duration_seconds_count{route="/api/v1/emails/:message_id",status_class="4xx"}'),
    1,
    'the pattern, not the path',
  );
  t.equal(
    value(after, 'posthaste_api_request_duration_seconds_count{route="unmatched",status_class="4xx"}'),
    2,
    'no route (this one, and /metrics asked of the API listener above): one series for all',
  );
});
