// `posthaste queue` by message and recipient, delete, and bad input, end to end: a daemon
// delivering on its own to a loopback MX that is down, then back; the CLI a process of its own
// (test/helpers/queue-env.ts).
import t from 'tap';
import { waitFor } from '../../support/wait.js';
import { getEmail } from '../helpers/api.js';
import { json } from '../helpers/cli.js';
import { type QueueJson as Entry, startQueueEnv } from '../helpers/queue-env.js';

// Each CLI command is a process of its own (1-3 s on a loaded machine): more than the default 120 s in all.
t.setTimeout(300_000);
const q = await startQueueEnv();
const { s, cli, send, stateOf, deferred } = q;

t.test('hold and release by message; delete ends waiting recipients canceled, never a delivered one', async (t) => {
  q.down = true;
  const m = await send(['p@other.test', 'q@a.example']);
  await deferred(m, 'p@other.test');
  await deferred(m, 'q@a.example');
  const hold = await cli('queue', 'hold', '--message', m, '--json');
  t.same(json(hold), { op: 'hold', changed: 2, in_flight: 0, dry_run: false });
  t.same(
    json<Entry[]>(await cli('queue', 'list', '--message', m, '--json')).map((e) => e.state),
    ['held', 'held'],
  );
  t.equal(
    json<Entry[]>(await cli('queue', 'list', '--message', `<${m}>`, '--json')).length,
    2,
    'the Message-ID in angle brackets, as a mail header writes it, selects the same',
  );
  t.match((await cli('queue', 'release', '--recipient', 'q@a.example')).stdout, /^released 1 recipient\n/);
  await waitFor('q tried again', async () => {
    const r = (await getEmail(s.url, s.key, m)).recipients as Array<{ address: string; attempts: number }>;
    return r.find((x) => x.address === 'q@a.example')!.attempts === 2;
  });
  q.down = false;
  const del = await cli('queue', 'delete', '--message', m);
  t.equal(del.code, 0, del.stderr);
  t.match(del.stdout, /^deleted 2 recipients\n/);
  t.equal(await stateOf(m, 'p@other.test'), 'canceled');
  t.equal(await stateOf(m, 'q@a.example'), 'canceled');
  const delivered = await send('r@other.test');
  await waitFor('r delivered', async () => (await stateOf(delivered, 'r@other.test')) === 'delivered');
  const none = await cli('queue', 'delete', '--message', delivered);
  t.match(none.stdout, /^deleted 0 recipients\n/);
  t.equal(await stateOf(delivered, 'r@other.test'), 'delivered', 'a delivered recipient is never changed');
});

t.test('bad input: a clear error, exit code 1, nothing changed', async (t) => {
  q.down = true;
  const m = await send('bad@other.test');
  await deferred(m, 'bad@other.test');
  const before = (await cli('queue', 'list', '--json')).stdout;
  const cases: Array<[string[], RegExp]> = [
    [['queue', 'retry'], /say which recipients to retry: one of --message ID/],
    [['queue', 'delete', '--message', m, '--all'], /one selector at a time: --message and --all/],
    [['queue', 'hold', '--destination', 'a.test', '--customer', 'default'], /one selector at a time/],
    [['queue', 'delete', '--all', '--older-than', 'yesterday'], /--older-than: "yesterday" is not a duration/],
    [['queue', 'list', '--older-than', '2x'], /--older-than: "2x" is not a duration/],
    [['queue', 'delete', '--message', 'nosuch@example.com'], /no message with the Message-ID nosuch@example\.com/],
    [['queue', 'retry', '--customer', 'nobody'], /no customer named "nobody"/],
    [['queue', 'release', '--sender', 'x'], /unknown option '--sender'/],
    [['queue', 'delete', '--all', '--state', 'bounced'], /argument 'bounced' is invalid/],
    [['queue', 'list', '--limit', '0'], /--limit must be 1 to 100000/],
    [['queue', 'hold'], /say which recipients to hold: one of --message ID/],
    [['queue', 'release'], /say which recipients to release: one of --message ID/],
    [['queue', 'delete'], /say which recipients to delete: one of --message ID/],
    [['queue', 'retry', '--recipient', 'bad@other.test', '--all'], /one selector at a time/],
    [['queue', 'release', '--message', 'nosuch@example.com'], /no message with the Message-ID nosuch@example\.com/],
    [['queue', 'hold', '--customer', 'nobody', '--dry-run'], /no customer named "nobody"/],
    [['queue', 'retry', '--all', '--older-than', '-1h'], /--older-than: "-1h" is not a duration/],
    [['queue', 'list', '--state', 'bounced'], /argument 'bounced' is invalid/],
    [['messages', 'cancel', 'nosuch@example.com'], /no message "nosuch@example\.com"/],
  ];
  const results = await Promise.all(cases.map(([args]) => cli(...args)));
  cases.forEach(([args, message], i) => {
    t.equal(results[i]!.code, 1, `${args.join(' ')}: exit code 1`);
    t.match(results[i]!.stderr, message, args.join(' '));
  });
  t.equal((await cli('queue', 'list', '--json')).stdout, before, 'nothing changed');
  t.same(await s.store.queue.heldDestinations(), [], 'no destination held by a refused command');
  const older = json<Entry[]>(await cli('queue', 'list', '--older-than', '1h', '--json'));
  t.same(older, [], 'nothing accepted an hour ago');
});
