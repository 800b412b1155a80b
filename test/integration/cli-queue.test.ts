// `posthaste queue`, end to end: a daemon delivering on its own (real clock, real SMTP on
// loopback) to a destination that is down, then back; the CLI, a process of its own, retries what
// waits for it, and holds and releases the destination (test/helpers/queue-env.ts).
import t from 'tap';
import { waitFor } from '../../support/wait.js';
import { json } from '../helpers/cli.js';
import { type QueueJson as Entry, startQueueEnv } from '../helpers/queue-env.js';

// Each CLI command is a process of its own (1-3 s on a loaded machine): more than the default 120 s in all.
t.setTimeout(300_000);
const q = await startQueueEnv();
const { cli, received, send, stateOf, deferred } = q;

t.test('after an outage, retry --destination delivers its deferred recipients within 5 s', async (t) => {
  const m1 = await send('x@a.example');
  const m2 = await send('y@b.example');
  const m3 = await send('z@other.test');
  await deferred(m1, 'x@a.example');
  await deferred(m2, 'y@b.example');
  await deferred(m3, 'z@other.test');
  q.down = false;
  const list = await cli('queue', 'list', '--state', 'deferred', '--json');
  t.equal(list.code, 0, list.stderr);
  const entries = json<Entry[]>(list);
  t.same(
    entries.map((e) => [e.recipient, e.destination, e.state, e.attempts]),
    [
      ['x@a.example', 'provider.test', 'deferred', 1],
      ['y@b.example', 'provider.test', 'deferred', 1],
      ['z@other.test', 'other.test', 'deferred', 1],
    ],
  );
  t.match(entries[0], { message_id: m1, last_response: { code: 451 }, next_attempt_at: String });
  const human = await cli('queue', 'list', '--destination', 'provider.test');
  t.match(human.stdout, /MESSAGE_ID\s+RECIPIENT\s+DESTINATION\s+STATE\s+ATTEMPTS\s+LAST_REPLY\s+NEXT_ATTEMPT/);
  t.match(human.stdout, /x@a\.example\s+provider\.test\s+deferred\s+1\s+451 4\.3\.0 Service unavailable/);
  const dry = await cli('queue', 'retry', '--destination', 'provider.test', '--dry-run');
  t.equal(dry.code, 0, dry.stderr);
  t.match(dry.stdout, /would have retried 2 recipients \(dry run: nothing changed\)/);
  const started = Date.now();
  const retry = await cli('queue', 'retry', '--destination', 'provider.test', '--json');
  t.equal(retry.code, 0, retry.stderr);
  t.same(json(retry), { op: 'retry', changed: 2, in_flight: 0, dry_run: false });
  await waitFor('both delivered', () => received('x@a.example') === 1 && received('y@b.example') === 1, 5_000);
  t.comment(`delivered ${Date.now() - started} ms after the command started`);
  t.equal(received('z@other.test'), 0, 'another destination waits for its schedule');
  t.equal(await stateOf(m3, 'z@other.test'), 'deferred');
  const again = await cli('queue', 'retry', '--destination', 'provider.test');
  t.equal(again.code, 0, '0 changed is no error');
  t.match(again.stdout, /^retried 0 recipients/);
  const one = await cli('queue', 'retry', '--message', m3);
  t.match(one.stdout, /^retried 1 recipient\n/);
  await waitFor('z delivered', () => received('z@other.test') === 1, 5_000);
});

t.test('a held destination receives nothing until released, mail accepted while held included', async (t) => {
  const hold = await cli('queue', 'hold', '--destination', 'Provider.test');
  t.equal(hold.code, 0, hold.stderr);
  t.match(hold.stdout, /held 0 recipients\nprovider\.test is held: what is accepted for it is held too/);
  const status = await cli('status');
  t.match(status.stdout, /held:\s+provider\.test since /);
  t.match(json(await cli('status', '--json')), { held_destinations: [{ destination: 'provider.test' }] });
  const m = await send(['w@a.example', 'v@other.test']);
  await waitFor('the other destination delivered', () => received('v@other.test') === 1);
  const held = await waitFor('held at its claim', async () => {
    const rows = json<Entry[]>(await cli('queue', 'list', '--state', 'held', '--json'));
    return rows.length === 1 && rows[0];
  });
  t.match(held, { message_id: m, recipient: 'w@a.example', state: 'held', attempts: 0, next_attempt_at: null });
  t.equal(received('w@a.example'), 0, 'nothing sent to a held destination');
  t.equal(await stateOf(m, 'w@a.example'), 'queued');
  t.match((await cli('queue', 'retry', '--all')).stdout, /^retried 0 recipients/, 'retry leaves held ones alone');
  const started = Date.now();
  const release = await cli('queue', 'release', '--destination', 'provider.test');
  t.equal(release.code, 0, release.stderr);
  t.match(release.stdout, /released 1 recipient\nprovider\.test is no longer held/);
  await waitFor('delivered once released', () => received('w@a.example') === 1, 5_000);
  t.comment(`delivered ${Date.now() - started} ms after release started`);
  t.match((await cli('status')).stdout, /held:\s+no destination/);
});
