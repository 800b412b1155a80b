// The operator's queue meeting delivery, end to end: a daemon delivering on its own (real clock,
// a poll a second, one connection at a time to the destination busy.test, one message each) to a
// loopback MX. A hold made while claimed recipients wait for a connection holds them, though no
// claim takes anything new; a retry by destination lifts the destination's adaptive pause (it
// answered 421), from the CLI, a process of its own, on SQLite as on PostgreSQL.
import t from 'tap';
import { quiet, waitFor } from '../../support/wait.js';
import { getEmail, sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { startMailEnv } from '../helpers/mail-env.js';

// Each CLI command is a process of its own (1-3 s on a loaded machine).
t.setTimeout(180_000);
const s = await startMailEnv({
  mxDomains: ['busy.test'],
  daemon: { manualDelivery: false },
  outbound: 'retry_schedule = ["1h"]\npoll_interval = "1s"\nconcurrency_per_domain = 1\nmessages_per_connection = 1\n',
});
const { mx } = s;
const send = (to: string) =>
  sendEmail(s.url, s.key, { from: 'shop@example.com', to, subject: 'Order', text_body: 'Thanks' });
const received = (to: string) => mx.received.filter((m) => m.to.includes(to)).length;
const entry = async (address: string) => (await s.store.queue.list({ recipient: address }, 10))[0];
const stateOf = async (id: string, address: string) =>
  ((await getEmail(s.url, s.key, id)).recipients as Array<{ address: string; state: string }>).find(
    (r) => r.address === address,
  )?.state;

t.test(
  'a hold holds the claimed recipients waiting for a connection, though no claim takes anything new',
  async (t) => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let sending = false;
    mx.holdData = (rcpt) => {
      if (rcpt !== 'h1@busy.test') return undefined;
      sending = true;
      return gate;
    };
    t.teardown(() => {
      mx.holdData = () => undefined;
    });
    await send('h1@busy.test');
    await waitFor('h1 being sent', () => sending);
    await send('h2@busy.test');
    await send('h3@busy.test');
    await waitFor('h2 and h3 claimed, waiting for the connection', async () => {
      const [h2, h3] = [await entry('h2@busy.test'), await entry('h3@busy.test')];
      return h2?.in_flight && h3?.in_flight;
    });
    const hold = await s.store.queue.apply('hold', { destination: 'busy.test' }, Date.now(), false);
    t.match(hold, { changed: 3, in_flight: 3 });
    open();
    await waitFor('h1 delivered: its attempt finishes first', () => received('h1@busy.test') === 1);
    await quiet(2_000);
    t.same([received('h2@busy.test'), received('h3@busy.test')], [0, 0], 'the held destination gets nothing more');
    t.match(await entry('h2@busy.test'), { state: 'held', attempts: 0, in_flight: false });
    t.match(await entry('h3@busy.test'), { state: 'held', attempts: 0, in_flight: false });
    const release = await s.store.queue.apply('release', { destination: 'busy.test' }, Date.now(), false);
    t.equal(release.changed, 2);
    await waitFor('released: delivered', () => received('h2@busy.test') + received('h3@busy.test') === 2, 5_000);
  },
);

t.test('retry --destination lifts the adaptive pause of a destination that answered 421', async (t) => {
  let down = true;
  mx.script = () => (down ? { rcpt: [421, '4.7.0 Too many connections, slow down'] } : undefined);
  t.teardown(() => {
    mx.script = () => undefined;
  });
  const first = await send('p1@busy.test');
  await waitFor('p1 deferred by the 421', async () => (await stateOf(first, 'p1@busy.test')) === 'deferred');
  // The destination is paused (30 s at the first refusal): what is claimed meanwhile is held back.
  const second = await send('p2@busy.test');
  await waitFor('p2 held back behind the pause', async () => {
    const e = await entry('p2@busy.test');
    return e && !e.in_flight && e.next_attempt_at !== null && e.next_attempt_at > Date.now() + 10_000;
  });
  down = false;
  const retry = await runCli(['--config', s.configPath, 'queue', 'retry', '--destination', 'busy.test', '--json']);
  t.equal(retry.code, 0, retry.stderr);
  t.match(json(retry), { op: 'retry', changed: 2 }, 'the deferred one, and the one held back by the pause');
  const started = Date.now();
  await waitFor('both delivered', () => received('p1@busy.test') + received('p2@busy.test') === 2, 5_000);
  t.comment(`delivered ${Date.now() - started} ms after the command ended`);
  await waitFor('p2 recorded delivered', async () => (await stateOf(second, 'p2@busy.test')) === 'delivered');
});
