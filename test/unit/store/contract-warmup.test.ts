import t from 'tap';
import { released, twoNodes } from '../../helpers/race.js';
import { contract } from '../../helpers/stores.js';

// The store's contract on both engines for the warm-up's use (store/warmup-store.ts): a
// reservation grants what room is left under the cap, at most what was asked and never below 0,
// all of a batch in one transaction; what is given back makes room again; a day's use is summed
// per address; old days go with the retention sweep, yesterday kept. On PostgreSQL two nodes
// reserving the last room at once never together pass the cap.

const DAY = '2026-12-01';
const want = (ip: string, destination: string, n: number, cap: number) => ({ ip, destination, n, cap });

contract('warm-up: a reservation grants min(n, cap - used), never below 0, and adds it', async (t, s) => {
  t.same(await s.warmup.reserve(DAY, []), [], 'an empty batch');
  t.same(
    await s.warmup.reserve(DAY, [
      want('192.0.2.20', 'google.com', 30, 50),
      want('192.0.2.20', 'outlook.com', 80, 50),
      want('192.0.2.21', 'google.com', 5, 50),
    ]),
    [30, 50, 5],
    'each want against its own row',
  );
  t.same(await s.warmup.reserve(DAY, [want('192.0.2.20', 'google.com', 30, 50)]), [20], 'what room is left');
  t.same(await s.warmup.reserve(DAY, [want('192.0.2.20', 'google.com', 1, 50)]), [0], 'none left: 0');
  t.same(
    await s.warmup.reserve(DAY, [want('192.0.2.20', 'google.com', 10, 40)]),
    [0],
    'a cap below the use (the schedule changed): 0, not negative',
  );
  t.same(
    await s.warmup.reserve('2026-12-02', [want('192.0.2.20', 'google.com', 10, 100)]),
    [10],
    'another day has its own room',
  );
  t.same(
    await s.warmup.reserve(DAY, [want('192.0.2.22', 'yahoodns.net', 4, 10), want('192.0.2.22', 'yahoodns.net', 4, 10)]),
    [4, 4],
    'two wants of one row in a batch add up',
  );
  t.same(await s.warmup.reserve(DAY, [want('192.0.2.22', 'yahoodns.net', 4, 10)]), [2]);
  t.same(await s.warmup.usage(DAY), [
    { ip: '192.0.2.20', destinations: 2, sent: 100, highest: { destination: 'google.com', used: 50 } },
    { ip: '192.0.2.21', destinations: 1, sent: 5, highest: { destination: 'google.com', used: 5 } },
    { ip: '192.0.2.22', destinations: 1, sent: 10, highest: { destination: 'yahoodns.net', used: 10 } },
  ]);
});

contract('warm-up: given back makes room again, never below 0; usage ranks by use', async (t, s) => {
  t.same(
    await s.warmup.reserve(DAY, [want('192.0.2.20', 'google.com', 10, 10), want('192.0.2.20', 'outlook.com', 7, 10)]),
    [10, 7],
  );
  await s.warmup.giveBack(DAY, '192.0.2.20', 'google.com', 4);
  t.same(await s.warmup.usage(DAY), [
    { ip: '192.0.2.20', destinations: 2, sent: 13, highest: { destination: 'outlook.com', used: 7 } },
  ]);
  t.same(await s.warmup.reserve(DAY, [want('192.0.2.20', 'google.com', 10, 10)]), [4], 'the room given back');
  await s.warmup.giveBack(DAY, '192.0.2.20', 'outlook.com', 50);
  await s.warmup.giveBack(DAY, '192.0.2.99', 'nowhere.example', 5);
  await s.warmup.giveBack('2026-11-30', '192.0.2.20', 'google.com', 5);
  t.same(
    await s.warmup.usage(DAY),
    [{ ip: '192.0.2.20', destinations: 1, sent: 10, highest: { destination: 'google.com', used: 10 } }],
    'a use given back to 0 is not shown; a give-back of no reservation changes nothing',
  );
  t.same(await s.warmup.reserve(DAY, [want('192.0.2.20', 'outlook.com', 10, 10)]), [10], 'never below 0');
  t.same(await s.warmup.usage('2026-11-30'), [], 'a day without use');
});

contract('warm-up: the retention sweep removes the days before yesterday', async (t, s) => {
  const now = Date.parse('2026-12-03T10:00:00Z');
  for (const day of ['2026-11-30', '2026-12-01', '2026-12-02', '2026-12-03'])
    await s.warmup.reserve(day, [want('192.0.2.20', 'google.com', 3, 10)]);
  await s.admin.purgeOld(now, 0);
  for (const [day, kept] of [
    ['2026-11-30', false],
    ['2026-12-01', false],
    ['2026-12-02', true],
    ['2026-12-03', true],
  ] as const)
    t.equal((await s.warmup.usage(day)).length, kept ? 1 : 0, `${day} ${kept ? 'kept' : 'removed'}`);
});

t.test('postgres: two nodes reserving the last room at once never together pass the cap', async (t) => {
  const n = await twoNodes(t);
  t.same(await n.a.warmup.reserve(DAY, [want('192.0.2.20', 'google.com', 4, 10)]), [4]);
  // Both wait to write the row, then take turns: the second reads what the first left.
  const [a, b] = await released(n, 'LOCK TABLE warmup_use IN SHARE ROW EXCLUSIVE MODE', 2, () => [
    n.a.warmup.reserve(DAY, [want('192.0.2.20', 'google.com', 5, 10), want('192.0.2.20', 'outlook.com', 5, 5)]),
    n.b.warmup.reserve(DAY, [want('192.0.2.20', 'outlook.com', 5, 5), want('192.0.2.20', 'google.com', 5, 10)]),
  ]);
  t.same([a![0]! + b![1]!, a![1]! + b![0]!], [6, 5], 'the room left, and no more, granted between them');
  t.same(await n.a.warmup.usage(DAY), [
    { ip: '192.0.2.20', destinations: 2, sent: 15, highest: { destination: 'google.com', used: 10 } },
  ]);
  // Many at once, without a gate: 40 reservations of one for 12 left.
  const many = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      (i % 2 ? n.a : n.b).warmup.reserve(DAY, [want('192.0.2.21', 'google.com', 1, 12)]),
    ),
  );
  t.equal(
    many.reduce((x, [g]) => x + g!, 0),
    12,
    'exactly the cap granted',
  );
});
