// Warm-up of source addresses (docs/delivery.md, "Warm-up"), on loopback with the daemon on a
// test clock: a warming address sends at most its day's cap to a destination, what is over goes
// from another address of the pool with room, and what no address has room for waits for the
// next UTC day without an attempt counted.

import t from 'tap';
import { ManualClock } from '../../src/lib/clock.js';
import { getEmail, sendEmail } from '../helpers/api.js';
import type { Json } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const DAY = 86_400_000;
const start = Date.parse('2026-12-10T00:00:00Z');
const clock = new ManualClock(start + 10 * 3_600_000);

const s = await startMailEnv({
  mxDomains: ['rcpt.test'],
  daemon: { clock },
  outbound: `warmup_schedule = [3, 5]

[[outbound.pools]]
name = "main"
addresses = [ { ip = "127.0.0.2", ehlo = "mta2.warm.test", warmup_start = "2026-12-10" }, { ip = "127.0.0.3", ehlo = "mta3.warm.test", warmup_start = "2026-12-10" } ]
`,
});
const { mx, key } = s;

const from = (to: string) => mx.received.filter((m) => m.to[0] === to).map((m) => m.remoteAddress);
const sentFrom = (ip: string) => mx.received.filter((m) => m.remoteAddress === ip).length;

t.test('each address sends at most its cap a day; the rest waits for the next day, unattempted', async (t) => {
  const to = Array.from({ length: 9 }, (_, i) => `w${i + 1}@rcpt.test`);
  const ids = new Map<string, string>();
  for (const address of to)
    ids.set(
      address,
      await sendEmail(s.url, key, { from: 'shop@example.com', to: address, subject: 'Hi', text_body: 'Hello.' }),
    );
  await s.daemon.scheduler.drain();
  await s.daemon.scheduler.drain();

  t.same(
    [sentFrom('127.0.0.2'), sentFrom('127.0.0.3')],
    [3, 3],
    'day 0: the cap (3) from each, the second taking what the first had no room for',
  );
  t.equal(mx.received.length, 6, 'nothing from any other address');
  const waiting = to.filter((a) => from(a).length === 0);
  t.equal(waiting.length, 3);
  for (const address of waiting) {
    const email = (await getEmail(s.url, key, ids.get(address)!)) as { recipients: Json[] };
    t.match(email.recipients[0], { state: 'queued', attempts: 0 }, `${address}: waiting, no attempt counted`);
  }
  const usage = await s.store.warmup.usage('2026-12-10');
  t.same(
    usage.map((u) => [u.ip, u.sent]).sort(),
    [
      ['127.0.0.2', 3],
      ['127.0.0.3', 3],
    ],
    "the day's use, as the store counts it",
  );

  // Later the same day: still nothing.
  clock.advance(6 * 3_600_000);
  await s.daemon.scheduler.drain();
  t.equal(mx.received.length, 6, 'the cap holds all day');

  // The next UTC day: day 1's cap, and the three go.
  clock.set(start + DAY + 60_000);
  await s.daemon.scheduler.drain();
  t.equal(mx.received.length, 9, 'delivered on the next day');
  for (const address of waiting) {
    const email = (await getEmail(s.url, key, ids.get(address)!)) as { recipients: Json[] };
    t.match(
      email.recipients[0],
      { state: 'delivered', attempts: 1 },
      `${address}: one attempt, the one that delivered`,
    );
  }
});
