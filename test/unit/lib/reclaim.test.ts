import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import t from 'tap';
import { HUGE_BYTES, LARGE_BYTES, reclaimAfter } from '../../../src/lib/reclaim.js';

// Forced (explicit) collections, as V8 reports them to perf_hooks; V8's own never carry the flag.
let forced = 0;
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    if (
      ((e as PerformanceEntry & { detail?: { flags?: number } }).detail?.flags ?? 0) &
      constants.NODE_PERFORMANCE_GC_FLAGS_FORCED
    )
      forced++;
});
observer.observe({ entryTypes: ['gc'] });
t.teardown(() => observer.disconnect());

/** The count of forced collections once things settle: waits for `expected` (entries arrive late on a busy machine), then a little more for any extra. */
async function settled(expected: number): Promise<number> {
  for (let waited = 0; forced < expected && waited < 3000; waited += 20)
    await new Promise((resolve) => setTimeout(resolve, 20));
  await new Promise((resolve) => setTimeout(resolve, 100));
  return forced;
}

t.test(
  'a small message collects nothing; a large one is followed by one full collection; at most once per interval',
  async (t) => {
    reclaimAfter(LARGE_BYTES - 1, 10_000);
    t.equal(await settled(0), 0, 'small: no collection');
    reclaimAfter(LARGE_BYTES, 10_000);
    t.equal(await settled(1), 1, 'large: one collection');
    reclaimAfter(LARGE_BYTES * 10, 11_000);
    t.equal(await settled(1), 1, 'one second later: not again');
    reclaimAfter(LARGE_BYTES, 12_500);
    t.equal(await settled(2), 2, 'after the interval: again');
  },
);

t.test('a message of 4 MiB or more is always followed by a collection, however soon after the last', async (t) => {
  const before = forced;
  reclaimAfter(HUGE_BYTES, 20_000);
  t.equal(await settled(before + 1), before + 1);
  reclaimAfter(HUGE_BYTES, 20_100);
  t.equal(await settled(before + 2), before + 2, 'two huge messages 100 ms apart: two collections');
  reclaimAfter(LARGE_BYTES, 20_200);
  t.equal(await settled(before + 2), before + 2, 'a merely large one right after: none');
  reclaimAfter(HUGE_BYTES, 20_300);
  reclaimAfter(HUGE_BYTES, 20_300);
  t.equal(await settled(before + 3), before + 3, 'two in the same turn share one');
});
