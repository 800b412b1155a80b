import t from 'tap';
import { KeyedPool } from '../../../src/lib/keyed-pool.js';

// The runner both background loops share: limits, drain, stop, and one fill at a time even when
// a fill waits on the store.

const pool = (concurrency: number, finished: string[] = []) => new KeyedPool<number>({ concurrency, onFinish: (k) => finished.push(k), onError: () => {} });

const later = () => new Promise<void>((r) => setTimeout(r, 5));

t.test('tasks run within the global limit, are counted per key, and finish with onFinish', async (t) => {
  const finished: string[] = [];
  const p = pool(2, finished);
  const gates: Array<() => void> = [];
  const task = () => new Promise<void>((r) => gates.push(r));
  p.start('a', task);
  t.ok(p.hasRoom);
  p.start('b', task);
  t.notOk(p.hasRoom, 'two running: full');
  t.equal(p.runningFor('a'), 1);
  t.equal(p.running, 2);
  gates[0]!();
  await later();
  t.same(finished, ['a']);
  t.ok(p.hasRoom);
  t.equal(p.runningFor('a'), 0);
  gates[1]!();
  await p.stop();
  t.notOk(p.hasRoom, 'stopping: nothing new');
});

t.test('waiting work per key: added, handed out, emptied lists dropped, all taken at stop', async (t) => {
  const p = pool(1);
  p.add('a', 1);
  p.add('a', 2);
  p.add('b', 3);
  t.equal(p.waitingCount(), 3);
  t.equal(p.waitingFor('a'), 2);
  p.each((key, list) => {
    if (key === 'b') list.splice(0);
  });
  t.equal(p.waitingFor('b'), 0);
  t.ok(p.hasWaiting);
  t.same(p.takeAll(), [1, 2]);
  t.notOk(p.hasWaiting);
});

t.test('drain fills until nothing is found and nothing runs, then settles and looks once more', async (t) => {
  const p = pool(4);
  let rounds = 0;
  let settled = 0;
  await p.drain(
    async () => {
      await later();
      rounds++;
      if (rounds > 3) return 0;
      p.start('k', later);
      return 1;
    },
    async () => {
      settled++;
    },
  );
  t.equal(rounds, 5, 'three that found work, one empty, one after settling');
  t.equal(settled, 1);
});

t.test('never two fills at once, even when a fill waits; a wake during a fill runs the next at once', async (t) => {
  const p = pool(4);
  let inside = 0;
  let most = 0;
  let fills = 0;
  const fill = async () => {
    inside++;
    most = Math.max(most, inside);
    fills++;
    await later();
    inside--;
  };
  const stop = new AbortController();
  const started = Date.now();
  const running = p.run(stop.signal, 60_000, fill, () => {});
  await later();
  p.wake(); // during the first fill
  const once = async () => {
    await fill();
    return 0;
  };
  await Promise.all([p.drain(once), p.drain(once)]);
  while (fills < 4) await later();
  stop.abort();
  await running;
  t.equal(most, 1, 'one fill at a time');
  t.ok(Date.now() - started < 10_000, 'the wake did not wait for the poll interval');
});
