// Destination throttling, end to end on a manual clock against a real SMTP server on loopback:
// a destination that answers "421 4.7.28" past N messages a minute is slowed down (fewer
// connections, a growing pause) instead of being sent message after message into the same wall,
// while another destination runs at full speed; once it accepts again it gets its speed back.
// A destination with per_minute set never gets more than that in any 60 seconds.
import t from 'tap';
import { ManualClock } from '../../src/lib/clock.js';
import { json, runCli } from '../helpers/cli.js';
import { TEST_ENGINE } from '../helpers/env.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const clock = new ManualClock(Date.now());
const s = await startMailEnv({
  mxDomains: ['fast.test', 'metered.test'],
  outbound:
    'concurrency_per_domain = 4\nmessages_per_connection = 5\ndestination_limits = ["metered.test per_minute=20"]\n',
  daemon: { clock },
});
const { dns, mx, key } = s;
// slow.test and alias.test share their MX hosts (as gmail.com and googlemail.com do): one destination, "slow.test".
dns.set('slow.test', {
  MX: [
    { preference: 10, exchange: 'mx1.slow.test' },
    { preference: 20, exchange: 'mx2.slow.test' },
  ],
});
dns.set('alias.test', { MX: [{ preference: 10, exchange: 'mx1.slow.test' }] });
dns.set('mx1.slow.test', { A: ['127.0.0.1'] });
dns.set('mx2.slow.test', { A: ['127.0.0.1'] });

// The slow destination's rule: `limit` recipients per window (the test opens a new window when
// it moves the clock past a minute), then 421 4.7.28 as Gmail words it.
// The script is asked at RCPT TO and again at the end of DATA: only the first asks count.
const slow = { limit: 10, accepted: 0, refused: 0 };
const isSlow = (rcpt: string) => /@(slow|alias)\.test$/.test(rcpt);
const decided = new Set<string>();
mx.script = (rcpt, attempt) => {
  if (!isSlow(rcpt) || decided.has(`${rcpt} ${attempt}`)) return undefined;
  decided.add(`${rcpt} ${attempt}`);
  if (slow.accepted >= slow.limit) {
    slow.refused++;
    return {
      rcpt: [
        421,
        '4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited.',
      ],
    };
  }
  slow.accepted++;
  return undefined;
};
const newWindow = () => {
  slow.accepted = 0;
  slow.refused = 0;
};

const delivered = (re: RegExp) => mx.received.filter((m) => re.test(m.to[0]!)).length;

/** Queues one message per address through the batch API. */
async function queue(addresses: string[]): Promise<void> {
  for (let i = 0; i < addresses.length; i += 100) {
    const body = addresses
      .slice(i, i + 100)
      .map((to) => ({ from: 'shop@example.com', to, subject: 'Order', text_body: 'Thanks.' }));
    const r = await request(`${s.url}/api/v1/emails/batch`, { key, body });
    if (r.status !== 202) throw new Error(`batch: ${r.status} ${JSON.stringify(r.body)}`);
  }
}
/** The recipients whose address matches, with what the queue holds for them. */
const states = async (domainRe: string) =>
  (
    await s.sql.all<{ address: string; state: string; attempts: number; next_attempt_at: number | null }>(
      'SELECT address, state, attempts, next_attempt_at FROM recipients ORDER BY id',
    )
  )
    .filter((r) => new RegExp(domainRe).test(r.address))
    .map(({ address: _a, ...r }) => r);

t.test(
  'a destination that refuses past its rate is slowed down; another runs at full speed; it recovers',
  async (t) => {
    const slowAddresses = [
      ...Array.from({ length: 40 }, (_, i) => `s${i}@slow.test`),
      ...Array.from({ length: 10 }, (_, i) => `a${i}@alias.test`),
    ];
    await queue([...slowAddresses, ...Array.from({ length: 50 }, (_, i) => `f${i}@fast.test`)]);
    const t0 = clock.now();

    await s.daemon.scheduler.drain();
    t.equal(delivered(/@fast\.test$/), 50, 'the other destination: everything, at once');
    t.equal(s.daemon.scheduler.peakPerDestination.get('fast.test'), 4, 'with all its connections');
    t.equal(slow.accepted, 10, 'the slow destination took its 10');
    t.ok(
      slow.refused >= 1 && slow.refused <= 4,
      `one refusal per open connection at most, not one per message (${slow.refused})`,
    );
    let rs = await states('@(slow|alias)\\.test$');
    t.equal(rs.filter((r) => r.state === 'delivered').length, 10);
    t.equal(
      rs.filter((r) => r.state === 'deferred').length,
      slow.refused,
      'the refused ones are deferred with the reply',
    );
    const waiting = rs.filter((r) => r.state === 'queued');
    t.equal(waiting.length, 50 - 10 - slow.refused, 'the rest were not tried');
    t.ok(
      waiting.every((r) => r.attempts === 0 && r.next_attempt_at! >= t0 + 30_000),
      'and wait, without an attempt, until the pause ends',
    );
    t.match(await s.store.delivery.throttles(), [
      {
        destination: 'slow.test',
        connections: 2,
        strikes: 1,
        pausedUntil: t0 + 30_000,
        reason: { code: 421, enhanced_code: '4.7.28', classification: 'rate_limited' },
      },
    ]);

    const st = json<Json>(await runCli(['--config', s.configPath, 'status', '--json']));
    t.match(st.throttled, [
      {
        destination: 'slow.test',
        connections: 2,
        refusals: 1,
        paused_until: new Date(t0 + 30_000).toISOString(),
        reason: { code: 421, enhanced_code: '4.7.28', message: /unusual rate/ },
      },
    ]);
    // On PostgreSQL each node's backoff is its own, and status says whose.
    const whose =
      TEST_ENGINE === 'postgres'
        ? ` \\(node ${s.config.server.node_name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)`
        : '';
    t.match(
      (await runCli(['--config', s.configPath, 'status'])).stdout,
      new RegExp(`throttled: slow\\.test${whose}: .*2 connections; 1 refusal .* last: 421 4\\.7\\.28 Our system`),
    );

    // Half a minute later, still in the destination's minute: refused again, by fewer connections; the pause doubles.
    slow.refused = 0;
    clock.advance(30_000);
    await s.daemon.scheduler.drain();
    t.ok(slow.refused >= 1 && slow.refused <= 2, `at most one refusal per connection left (${slow.refused})`);
    t.equal(slow.accepted, 10, 'nothing more got through');
    t.match(await s.store.delivery.throttles(), [
      { destination: 'slow.test', connections: 1, strikes: 2, pausedUntil: clock.now() + 60_000 },
    ]);
    clock.advance(30_000);
    const before = mx.attempts.size;
    await s.daemon.scheduler.drain();
    t.equal(mx.attempts.size, before, 'during the pause nothing at all is tried at that destination, retries included');

    // A new minute: the destination takes its 10 again, then refuses; refusals in that minute stay at the one connection left.
    newWindow();
    clock.advance(31_000);
    await s.daemon.scheduler.drain();
    t.ok(slow.accepted > 0 && slow.accepted <= 10, `it takes mail again (${slow.accepted})`);
    t.ok(slow.refused <= 1, `at most one refusal (${slow.refused})`);

    // It stops refusing: it gets its connections back and everything goes.
    slow.limit = Infinity;
    mx.peakOpen = 0;
    for (let i = 0; i < 40 && (await states('@(slow|alias)\\.test$')).some((r) => r.state !== 'delivered'); i++) {
      clock.advance(15_000);
      await s.daemon.scheduler.drain();
    }
    rs = await states('@(slow|alias)\\.test$');
    t.equal(rs.filter((r) => r.state === 'delivered').length, 50, 'all delivered once it accepts');
    t.equal(new Set(mx.received.filter((m) => isSlow(m.to[0]!)).map((m) => m.to[0])).size, 50, 'each once');
    t.same(await s.store.delivery.throttles(), [], 'no longer throttled');
    t.match(json<Json>(await runCli(['--config', s.configPath, 'status', '--json'])).throttled, []);

    // Back at full speed: a new burst goes in one pass, over all four connections.
    mx.peakOpen = 0;
    mx.dataDelayMs = 50; // long enough for connections to overlap
    t.teardown(() => void (mx.dataDelayMs = 0));
    await queue(Array.from({ length: 40 }, (_, i) => `again${i}@slow.test`));
    await s.daemon.scheduler.drain();
    t.equal((await states('^again')).filter((r) => r.state === 'delivered').length, 40, 'all in one pass');
    t.equal(mx.peakOpen, 4, 'over its four connections again');
  },
);

t.test('per_minute: never more than that many started in any 60 seconds, and everything goes in the end', async (t) => {
  await queue(Array.from({ length: 50 }, (_, i) => `m${i}@metered.test`));
  const t0 = clock.now();
  const log: Array<{ at: number; n: number }> = [];
  let last = 0;
  for (let at = t0; at <= t0 + 4 * 60_000 && last < 50; at += 5_000) {
    clock.set(at);
    await s.daemon.scheduler.drain();
    const now = delivered(/@metered\.test$/);
    if (now > last) log.push({ at, n: now - last });
    last = now;
  }
  t.equal(last, 50, 'all 50 delivered');
  t.equal(log[0]!.n, 20, 'the first 20 at once');
  for (const w of log) {
    const inMinute = log.filter((x) => x.at >= w.at && x.at < w.at + 60_000).reduce((a, x) => a + x.n, 0);
    t.ok(inMinute <= 20, `at most 20 in the minute from +${(w.at - t0) / 1000}s (${inMinute})`);
  }
  t.ok(
    log[log.length - 1]!.at - t0 <= 3 * 60_000,
    'and not much slower than the limit: 50 at 20 a minute within three minutes',
  );
  t.same(await s.store.delivery.throttles(), [], 'a configured limit is not a refusal: nothing is shown as throttled');
});
