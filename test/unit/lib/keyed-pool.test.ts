import t from 'tap';
import { KeyedPool } from '../../../src/lib/keyed-pool.js';

// The runner both background loops share: limits, drain, stop, and one fill at a time even when
// a fill waits on the store.

const pool = (concurrency: number, finished: string[] = []) =>
  new KeyedPool<number>({ concurrency, onFinish: (k) => finished.push(k), onError: () => {} });

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

t.test('a task that rejects or throws goes to onError and still counts as finished', async (t) => {
  const finished: string[] = [];
  const errors: Array<[string, string]> = [];
  const p = new KeyedPool<number>({
    concurrency: 2,
    onFinish: (k) => finished.push(k),
    onError: (e, k) => errors.push([(e as Error).message, k]),
  });
  p.start('a', async () => {
    await later();
    throw new Error('rejected');
  });
  p.start('b', () => {
    throw new Error('thrown');
  });
  t.equal(p.running, 2, 'both counted while they settle');
  await p.stop();
  t.same(errors.sort(), [
    ['rejected', 'a'],
    ['thrown', 'b'],
  ]);
  t.same(finished.sort(), ['a', 'b'], 'onFinish for both');
  t.equal(p.running, 0);
  t.equal(p.runningFor('a'), 0);
  t.equal(p.runningFor('b'), 0);
});

t.test('tasks of one key are counted together until the last settles', async (t) => {
  const p = pool(4);
  const gates: Array<() => void> = [];
  const task = () => new Promise<void>((r) => gates.push(r));
  p.start('a', task);
  p.start('a', task);
  t.equal(p.runningFor('a'), 2);
  gates[0]!();
  await later();
  t.equal(p.runningFor('a'), 1);
  gates[1]!();
  await p.stop();
  t.equal(p.runningFor('a'), 0);
});

t.test('a list partly taken stays with what is left', async (t) => {
  const p = pool(1);
  p.add('a', 1);
  p.add('a', 2);
  p.add('a', 3);
  p.each((_key, list) => {
    list.shift();
  });
  t.equal(p.waitingFor('a'), 2);
  t.same(p.takeAll(), [2, 3]);
});

t.test('tracked work is waited for by stop and drain, and not counted against the limit', async (t) => {
  const p = pool(1);
  let done = 0;
  p.track(later().then(() => void done++));
  t.equal(p.running, 0, 'not a running task');
  t.ok(p.hasRoom);
  await p.drain(() => 0);
  t.equal(done, 1, 'drain waited for it');
  p.track(later().then(() => void done++));
  await p.stop();
  t.equal(done, 2, 'stop waited for it');
});

t.test(
  'run: fills every interval without a wake, a fill that throws goes to onError and the loop goes on',
  async (t) => {
    const p = pool(2);
    let fills = 0;
    const errors: unknown[] = [];
    const stop = new AbortController();
    const running = p.run(
      stop.signal,
      10,
      () => {
        fills++;
        if (fills === 2) throw new Error('store down');
      },
      (e) => errors.push(e),
    );
    while (fills < 4) await later();
    stop.abort();
    await running;
    t.equal(errors.length, 1, 'the one fill that threw');
    t.match(errors[0], { message: 'store down' });
    t.ok(fills >= 4, 'fills went on after the error');
  },
);

t.test(
  'run: an abort during the interval ends the loop at once; run resolves after the tasks in flight, and nothing starts after',
  async (t) => {
    const p = pool(2);
    let fills = 0;
    let taskDone = false;
    const stop = new AbortController();
    const started = Date.now();
    const running = p.run(
      stop.signal,
      60_000,
      () => {
        fills++;
        if (fills === 1)
          p.start('k', async () => {
            await new Promise<void>((r) => setTimeout(r, 50));
            taskDone = true;
          });
      },
      () => {},
    );
    await later();
    stop.abort();
    await running;
    t.ok(Date.now() - started < 10_000, 'the abort did not wait for the poll interval');
    t.ok(taskDone, 'the task in flight finished before run resolved');
    t.equal(fills, 1, 'no fill after the abort');
    t.ok(p.stopping);
    t.notOk(p.hasRoom, 'stopped: no room');
  },
);

t.test('exclusive: a fill that rejects does not stop the next one', async (t) => {
  const p = pool(1);
  await t.rejects(
    p.exclusive(async () => {
      throw new Error('first');
    }),
    { message: 'first' },
  );
  t.equal(await p.exclusive(() => 7), 7);
});
