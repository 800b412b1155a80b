import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../../src/config/load.js';
import {
  DEFAULT_WARMUP_SCHEDULE,
  nextUtcMidnight,
  scheduleProblem,
  warmupCap,
  warmupDayIndex,
  warmupStatus,
} from '../../../src/domain/warmup.js';
import { tempDir } from '../../helpers/env.js';

// The warm-up rule (docs/delivery.md, "Warm-up"): an address's day since its warmup_start, in UTC
// days, its cap per destination that day from outbound.warmup_schedule, and the schedule's checks.

const at = (iso: string) => Date.parse(iso);

t.test('the day of a warm-up counts UTC days from warmup_start; before it is day 0', async (t) => {
  t.equal(warmupDayIndex(undefined, at('2026-12-01T12:00:00Z')), null, 'no warmup_start: not warming');
  t.equal(warmupDayIndex('2026-12-01', at('2026-12-01T00:00:00Z')), 0, 'the start day, at midnight');
  t.equal(warmupDayIndex('2026-12-01', at('2026-12-01T23:59:59.999Z')), 0, 'the start day, its last ms');
  t.equal(warmupDayIndex('2026-12-01', at('2026-12-02T00:00:00Z')), 1, 'the next UTC day');
  t.equal(warmupDayIndex('2026-12-01', at('2026-11-20T10:00:00Z')), 0, 'a day before the start counts as day 0');
  t.equal(warmupDayIndex('2026-02-27', at('2026-03-01T01:00:00Z')), 2, 'across a month end');
});

t.test("the cap is the schedule's day, null past its end or without warmup_start", async (t) => {
  const s = [10, 20, 40];
  t.equal(warmupCap(s, '2026-12-01', at('2026-11-30T08:00:00Z')), 10, 'before the start: day 0');
  t.equal(warmupCap(s, '2026-12-01', at('2026-12-01T08:00:00Z')), 10);
  t.equal(warmupCap(s, '2026-12-01', at('2026-12-03T23:00:00Z')), 40, 'the last day of the schedule');
  t.equal(warmupCap(s, '2026-12-01', at('2026-12-04T00:00:00Z')), null, 'past the end: full volume');
  t.equal(warmupCap(s, undefined, at('2026-12-01T08:00:00Z')), null, 'no warmup_start: no cap');
});

t.test('the next UTC midnight', async (t) => {
  t.equal(nextUtcMidnight(at('2026-12-01T08:30:00Z')), at('2026-12-02T00:00:00Z'));
  t.equal(nextUtcMidnight(at('2026-12-01T00:00:00Z')), at('2026-12-02T00:00:00Z'), 'at midnight: the next one');
  t.equal(nextUtcMidnight(at('2026-12-31T23:59:59.999Z')), at('2027-01-01T00:00:00Z'));
});

t.test('the default schedule: four weeks, non-decreasing, no step more than doubling', async (t) => {
  t.equal(DEFAULT_WARMUP_SCHEDULE.length, 28);
  t.equal(scheduleProblem(DEFAULT_WARMUP_SCHEDULE), null);
  for (let i = 1; i < DEFAULT_WARMUP_SCHEDULE.length; i++)
    t.ok(DEFAULT_WARMUP_SCHEDULE[i]! <= 2 * DEFAULT_WARMUP_SCHEDULE[i - 1]!, `day ${i} at most doubles day ${i - 1}`);
});

t.test('outbound.warmup_schedule is checked at load, with a clear error', async (t) => {
  const d = tempDir();
  t.teardown(d.remove);
  const load = (toml: string, env: NodeJS.ProcessEnv = {}) => {
    const p = join(d.path, 'c.toml');
    writeFileSync(p, toml);
    return loadConfig({ path: p, env });
  };
  t.same(load('').outbound.warmup_schedule, DEFAULT_WARMUP_SCHEDULE, 'the default');
  t.same(load('[outbound]\nwarmup_schedule = [5, 5, 10]\n').outbound.warmup_schedule, [5, 5, 10]);
  t.same(
    load('', { POSTHASTE_OUTBOUND_WARMUP_SCHEDULE: '1, 2,3' }).outbound.warmup_schedule,
    [1, 2, 3],
    'from the env',
  );
  t.throws(() => load('[outbound]\nwarmup_schedule = []\n'), /outbound\.warmup_schedule.*non-empty/);
  t.throws(
    () => load('[outbound]\nwarmup_schedule = [10, 0]\n'),
    /outbound\.warmup_schedule.*day 1.*0 is not a positive integer/,
  );
  t.throws(() => load('[outbound]\nwarmup_schedule = [10, 2.5]\n'), /2\.5 is not a positive integer/);
  t.throws(() => load('[outbound]\nwarmup_schedule = [10, "20"]\n'), /"20" is not a positive integer/);
  t.throws(() => load('[outbound]\nwarmup_schedule = [100, 50]\n'), /day 1.*50 is below day 0's 100.*never goes down/);
  t.throws(() => load('[outbound]\nwarmup_schedule = 100\n'), /outbound\.warmup_schedule.*array of integers/);
});

t.test("status rows: each configured address with its day, today's cap and use", async (t) => {
  const pools = [
    { name: 'tx', addresses: [{ ip: '192.0.2.10', ehlo: 'mta1.example.net' }] },
    { name: 'bulk', addresses: [{ ip: '192.0.2.20', ehlo: 'mta2.example.net', warmup_start: '2026-12-01' }] },
  ];
  const rows = warmupStatus(
    pools,
    [10, 20, 40],
    [{ ip: '192.0.2.20', destinations: 2, sent: 25, highest: { destination: 'google.com', used: 20 } }],
    at('2026-12-02T09:00:00Z'),
  );
  t.same(rows, [
    {
      pool: 'tx',
      ip: '192.0.2.10',
      ehlo: 'mta1.example.net',
      warmup_start: null,
      day: null,
      days: 3,
      cap: null,
      destinations: 0,
      sent: 0,
      highest: null,
    },
    {
      pool: 'bulk',
      ip: '192.0.2.20',
      ehlo: 'mta2.example.net',
      warmup_start: '2026-12-01',
      day: 2,
      days: 3,
      cap: 20,
      destinations: 2,
      sent: 25,
      highest: { destination: 'google.com', used: 20 },
    },
  ]);
});
