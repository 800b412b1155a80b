import t from 'tap';
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { reclaimAfter, LARGE_BYTES } from '../../src/lib/reclaim.js';

// Forced (explicit) collections, as V8 reports them to perf_hooks; V8's own never carry the flag.
let forced = 0;
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (((e as PerformanceEntry & { detail?: { flags?: number } }).detail?.flags ?? 0) & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced++;
});
observer.observe({ entryTypes: ['gc'] });
t.teardown(() => observer.disconnect());
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 50));

t.test('a small message collects nothing; a large one is followed by one full collection; at most once per interval', async (t) => {
  reclaimAfter(LARGE_BYTES - 1, 10_000);
  await settle();
  t.equal(forced, 0, 'small: no collection');
  reclaimAfter(LARGE_BYTES, 10_000);
  await settle();
  t.equal(forced, 1, 'large: one collection');
  reclaimAfter(LARGE_BYTES * 10, 11_000);
  await settle();
  t.equal(forced, 1, 'one second later: not again');
  reclaimAfter(LARGE_BYTES, 12_500);
  await settle();
  t.equal(forced, 2, 'after the interval: again');
});
