import t from 'tap';
import { MemoryBudget } from '../../../src/lib/memory-budget.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test('holds that fit are granted at once; the rest wait in arrival order', async (t) => {
  const b = new MemoryBudget(100);
  const first = b.open();
  t.ok(first.tryGrow(60));
  const second = b.open();
  t.ok(second.tryGrow(40), 'fits exactly');
  const order: string[] = [];
  const third = b.open();
  const fourth = b.open();
  void third.grow(50).then(() => order.push('third'));
  void fourth.grow(10).then(() => order.push('fourth'));
  await tick();
  t.same(order, [], 'nothing frees room yet; the small one does not overtake the waiting one');
  t.notOk(b.open().tryGrow(1), 'nor does a newcomer');
  second.release();
  await tick();
  t.same(order, [], '40 free: the head (50) still waits');
  first.release();
  await tick();
  t.same(order, ['third', 'fourth'], 'then both, in order');
  t.equal(b.inUse, 60);
});

t.test(
  'the oldest hold is never made to wait, even past the limit, so holds that grow cannot block each other',
  async (t) => {
    const b = new MemoryBudget(100);
    const a = b.open();
    const c = b.open();
    t.ok(a.tryGrow(50));
    t.ok(c.tryGrow(50));
    t.notOk(c.tryGrow(10), 'a younger hold cannot grow past the limit');
    t.ok(a.tryGrow(30), 'the oldest can');
    let grown = false;
    void c.grow(10).then(() => (grown = true));
    await tick();
    t.notOk(grown);
    a.release();
    await tick();
    t.ok(grown, 'once the oldest is done, the next grows (and is now the oldest)');
    t.ok(c.tryGrow(500), 'alone, a hold takes what it needs');
    c.release();
    t.equal(b.inUse, 0);
  },
);

t.test('a wait ends when its signal aborts, holding nothing; a released hold gives everything back once', async (t) => {
  const b = new MemoryBudget(10);
  const a = b.open();
  t.ok(a.tryGrow(10));
  const w = b.open();
  const gone = new AbortController();
  const waiting = w.grow(5, gone.signal);
  gone.abort();
  t.equal(await waiting, false);
  w.release();
  a.release();
  a.release();
  t.equal(b.inUse, 0, 'released twice, given back once');
  const late = b.open();
  const blocker = b.open();
  t.ok(late.tryGrow(10));
  const p = blocker.grow(5);
  blocker.release(); // released while it waits: the grant goes straight back
  late.release();
  t.equal(await p, false);
  t.equal(b.inUse, 0);
});
