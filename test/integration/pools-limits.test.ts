// Destination limits and adaptive backoff per source address (docs/delivery.md, "Destinations"
// and "Sending identities"): receivers count what each sending address sends them, so with pools
// each (destination, address) has the destination's limits of its own, and a refusal slows only
// the address it was said to. On loopback: two addresses of 127.0.0.0/8, one MX that sees where
// each connection comes from.

import t from 'tap';
import { waitFor } from '../../support/wait.js';
import { getEmail, sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import type { Json } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const s = await startMailEnv({
  mxDomains: ['rcpt.test'],
  outbound: `retry_schedule = ["1s"]
concurrency_per_domain = 1
messages_per_connection = 1

[[outbound.pools]]
name = "main"
addresses = [ { ip = "127.0.0.2", ehlo = "mta2.lanes.test" }, { ip = "127.0.0.3", ehlo = "mta3.lanes.test" } ]
`,
});
const { mx, key } = s;
const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);

function sendTo(to: string): Promise<string> {
  return sendEmail(s.url, key, { from: 'shop@example.com', to, subject: 'Hi', text_body: 'Hello.' });
}

const from = (to: string) => mx.received.filter((m) => m.to[0] === to).map((m) => m.remoteAddress);

t.test("one connection at a time is each address's limit, not the destination's", async (t) => {
  mx.dataDelayMs = 300;
  t.teardown(() => {
    mx.dataDelayMs = 0;
  });
  const to = [1, 2, 3, 4, 5, 6].map((n) => `limit${n}@rcpt.test`);
  for (const address of to) await sendTo(address);
  await s.daemon.scheduler.drain();
  t.equal(mx.received.filter((m) => to.includes(m.to[0]!)).length, 6, 'all delivered');
  t.same(
    [mx.peakFrom.get('127.0.0.2'), mx.peakFrom.get('127.0.0.3')],
    [1, 1],
    'concurrency_per_domain = 1 held for each address',
  );
  t.equal(mx.peakOpen, 2, 'both addresses sent at once: two connections to the destination');
});

t.test('a refusal to slow down pauses the address it was said to; the other goes on', async (t) => {
  mx.script = (_rcpt, _n, address) =>
    address === '127.0.0.2' ? { rcpt: [421, '4.7.0 Too many messages from your address, slow down'] } : undefined;
  const to = [1, 2, 3, 4].map((n) => `slow${n}@rcpt.test`);
  const ids = new Map<string, string>();
  for (const address of to) ids.set(address, await sendTo(address));
  await waitFor('three delivered from 127.0.0.3', async () => {
    await s.daemon.scheduler.drain();
    return to.filter((a) => from(a).length > 0).length >= 3;
  });
  const delivered = to.filter((a) => from(a).length > 0);
  t.same(
    delivered.map((a) => from(a)),
    delivered.map(() => ['127.0.0.3']),
    'all from the address not refused',
  );
  const status = json(await cli('status', '--json')) as { throttled: Json[] };
  const throttled = status.throttled.map((r) => String(r.destination));
  t.equal(throttled.length, 1, 'one lane slowed');
  t.match(throttled[0], / from 127\.0\.0\.2$/, "the refused address's lane, named with the address");

  // The one refused keeps its address (greylisting lists the triplet): it waits for that
  // address's pause rather than going from the other.
  const [refused] = to.filter((a) => from(a).length === 0);
  t.ok(refused, 'one recipient was refused');
  const before = (await getEmail(s.url, key, ids.get(refused!)!)) as { recipients: Json[] };
  t.match(before.recipients[0], { state: 'deferred' }, 'deferred once, from 127.0.0.2');
  await s.daemon.scheduler.drain();
  t.same(from(refused!), [], 'not sent from 127.0.0.3 meanwhile');

  // An operator's retry lifts the pause of every lane of the destination.
  mx.script = () => undefined;
  const destination = throttled[0]!.replace(/ from .*$/, '');
  const retried = await cli('queue', 'retry', '--destination', destination);
  t.equal(retried.code, 0, retried.stderr);
  await waitFor('the refused recipient delivered', async () => {
    await s.daemon.scheduler.drain();
    return from(refused!).length > 0;
  });
  t.same(from(refused!), ['127.0.0.2'], 'from the address it was first tried from');
});
