import t from 'tap';
import { waitFor } from '../../../support/wait.js';
import { twoNodes } from '../../helpers/race.js';

// Wakeups between nodes on PostgreSQL (docs/cluster.md, "Wakeups"): every node hears every other
// node's notifications, so a node that keeps committing work sends one statement every 50 ms at
// most, not one every 5 ms: at 5 ms each busy peer would cost every node 200 wakeups a second.
// Two stores on one database play two nodes. PostgreSQL only: SQLite is one process.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('postgres: a node that keeps queueing work wakes the others once every 50 ms at most', async (t) => {
  const { a, b } = await twoNodes(t);
  const heard: number[] = [];
  const listening = await b.wakeups.listen('b', () => heard.push(performance.now()));
  t.teardown(() => listening.close());

  a.wakeups.notify('a', 'outbound');
  await waitFor('the first wakeup', () => heard.length === 1, 5_000, 5);

  // Half a second of work queued every millisecond or so.
  await sleep(100);
  const start = performance.now();
  let calls = 0;
  while (performance.now() - start < 500) {
    a.wakeups.notify('a', 'outbound');
    calls++;
    await sleep(1);
  }
  const loopMs = performance.now() - start;
  await sleep(200);
  const during = heard.filter((h) => h >= start).length;
  // On a loaded machine a 1 ms sleep takes longer and fewer notifications are asked for: the
  // bounds follow what was asked for and how long it took, not a fixed count.
  const most = Math.floor(loopMs / 50) + 3;
  t.comment(`${calls} notifications asked for in ${loopMs.toFixed(0)} ms, ${during} wakeups heard (at most ${most})`);
  t.ok(calls >= 3 * most, 'work was queued many times more often than once every 50 ms');
  t.ok(
    during >= 3 && during <= most,
    `about one wakeup every 50 ms (${during}; one every 5 ms would be ${Math.min(calls, Math.floor(loopMs / 5))})`,
  );

  // After a quiet spell, the next goes at once (after 5 ms), not 50 ms after the last.
  await sleep(200);
  const quiet = performance.now();
  a.wakeups.notify('a', 'outbound');
  await waitFor('the wakeup after a quiet spell', () => heard.some((h) => h > quiet), 5_000, 1);
  t.comment(`heard ${(heard.at(-1)! - quiet).toFixed(1)} ms after a quiet spell`);
});
