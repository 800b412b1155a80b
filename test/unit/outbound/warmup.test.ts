import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import { WarmupLedger } from '../../../src/outbound/warmup.js';
import type { Store } from '../../../src/store/store.js';
import { freshStore } from '../../helpers/stores.js';

// The warm-up ledger (docs/delivery.md, "Warm-up") against a real SQLite store: a warming
// address is granted what its day's cap per destination leaves, shared through the store; an
// address not warming is granted all without a store call; what was not tried is given back to
// the day it was reserved on; caps renew at the next UTC midnight.

const at = (iso: string) => Date.parse(iso);
const pools = [
  { name: 'tx', addresses: [{ ip: '192.0.2.10', ehlo: 'mta1.example.net' }] },
  {
    name: 'bulk',
    addresses: [
      { ip: '192.0.2.20', ehlo: 'mta2.example.net', warmup_start: '2026-12-01' },
      { ip: '2001:db8::20', ehlo: 'mta2.example.net', warmup_start: '2026-11-01' },
    ],
  },
];

async function ledger(t: Test, store?: Store) {
  const s = store ?? (await freshStore(t, 'sqlite'));
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _e, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const clock = new ManualClock(at('2026-12-02T10:00:00Z'));
  const l = new WarmupLedger({ store: s, clock, schedule: [10, 20, 40], pools, log: createLogger('info', sink) });
  return { s, l, lines, clock };
}

t.test("the cap of an address is its schedule's day; not warming: null", async (t) => {
  const { l } = await ledger(t);
  t.equal(l.capOf('192.0.2.20', at('2026-12-01T00:00:00Z')), 10, 'its start day');
  t.equal(l.capOf('192.0.2.20', at('2026-11-25T00:00:00Z')), 10, 'before its start: day 0');
  t.equal(l.capOf('192.0.2.20'), 20, "the clock's time when none is given");
  t.equal(l.capOf('192.0.2.20', at('2026-12-04T00:00:00Z')), null, 'past the schedule');
  t.equal(l.capOf('2001:db8::20', at('2026-12-02T10:00:00Z')), null, 'started a month ago: full volume');
  t.equal(l.capOf('192.0.2.10', at('2026-12-02T10:00:00Z')), null, 'no warmup_start');
  t.equal(l.capOf('198.51.100.1', at('2026-12-02T10:00:00Z')), null, 'not a configured address');
  t.equal(l.nextDay(at('2026-12-02T10:00:00Z')), at('2026-12-03T00:00:00Z'));
});

t.test('reserve: what the cap leaves, per destination, shared through the store', async (t) => {
  const { s, l, lines } = await ledger(t);
  const now = at('2026-12-02T10:00:00Z'); // day 1: cap 20
  t.same(
    await l.reserve(
      [
        { ip: '192.0.2.20', destination: 'google.com', n: 15 },
        { ip: '192.0.2.10', destination: 'google.com', n: 500 },
        { ip: '192.0.2.20', destination: 'outlook.com', n: 25 },
        { ip: '192.0.2.20', destination: 'yahoodns.net', n: 0 },
      ],
      now,
    ),
    [15, 500, 20, 0],
    'the warming address capped, the other granted all',
  );
  t.same(await l.reserve([{ ip: '192.0.2.20', destination: 'google.com', n: 15 }], now), [5], 'what is left');
  t.same(await l.reserve([{ ip: '192.0.2.20', destination: 'google.com', n: 15 }], now), [0], 'nothing left');
  t.same(
    await s.warmup.usage('2026-12-02'),
    [{ ip: '192.0.2.20', destinations: 2, sent: 40, highest: { destination: 'google.com', used: 20 } }],
    'only the warming address is counted',
  );
  // A second node's ledger on the same store sees the same use.
  const other = await ledger(t, s);
  t.same(await other.l.reserve([{ ip: '192.0.2.20', destination: 'outlook.com', n: 3 }], now), [0]);
  const said = lines.filter((x) => x.msg === 'warm-up: the address has reached its cap for this destination today');
  t.same(
    said.map((x) => [x.source_ip, x.destination, x.cap]),
    [
      ['192.0.2.20', 'outlook.com', 20],
      ['192.0.2.20', 'google.com', 20],
    ],
    'a cap reached is logged once a day per address and destination',
  );
  // The next UTC day: a cap of its own (day 2: 40), nothing used yet.
  t.same(
    await l.reserve([{ ip: '192.0.2.20', destination: 'google.com', n: 50 }], l.nextDay(now)),
    [40],
    'the next day renews the cap',
  );
});

t.test('an address not warming is granted without the store', async (t) => {
  const { s, l } = await ledger(t);
  await s.admin.close(); // a store call would now fail
  t.same(await l.reserve([{ ip: '192.0.2.10', destination: 'google.com', n: 7 }], at('2026-12-02T10:00:00Z')), [7]);
  await l.giveBack('192.0.2.10', 'google.com', 7, at('2026-12-02T10:00:00Z'));
  t.pass('given back without the store');
});

t.test('giveBack: to the day it was reserved on', async (t) => {
  const { s, l } = await ledger(t);
  const before = at('2026-12-02T23:59:00Z');
  const after = at('2026-12-03T00:01:00Z');
  t.same(await l.reserve([{ ip: '192.0.2.20', destination: 'google.com', n: 20 }], before), [20]);
  t.same(await l.reserve([{ ip: '192.0.2.20', destination: 'google.com', n: 5 }], after), [5]);
  await l.giveBack('192.0.2.20', 'google.com', 8, before);
  t.same((await s.warmup.usage('2026-12-02'))[0]?.sent, 12, "a give-back after midnight goes to the reservation's day");
  t.same((await s.warmup.usage('2026-12-03'))[0]?.sent, 5, "today's untouched");
  t.same(await l.reserve([{ ip: '192.0.2.20', destination: 'google.com', n: 20 }], before), [8], 'its room again');
});
