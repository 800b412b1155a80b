// Which connections a destination's recipients may open, and from which source address
// (outbound/lanes.ts): without pools the destination is the one lane, as before pools existed;
// with pools each (destination, address) has the destination's limits of its own.

import t from 'tap';
import type { Pool } from '../../../src/config/pools.js';
import type { DestinationLimits } from '../../../src/domain/destinations.js';
import { reply } from '../../../src/domain/outcome.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { DeliveryItem } from '../../../src/outbound/deliver.js';
import { type Lane, Lanes, type WarmupRoom } from '../../../src/outbound/lanes.js';
import { SourcePicker } from '../../../src/outbound/source.js';
import { Throttle } from '../../../src/outbound/throttle.js';
import type { QueuedMessage } from '../../../src/store/model.js';

const LIMITS: DestinationLimits = { connections: 1, perConnection: 2, perMinute: 0 };
const POOL: Pool = {
  name: 'main',
  addresses: [
    { ip: '192.0.2.1', ehlo: 'a.example.net' },
    { ip: '192.0.2.2', ehlo: 'b.example.net' },
  ],
};

function item(id: number, sourceIp: string | null = null): DeliveryItem {
  const message = { id, customerId: 1, messageId: `m${id}@x.test`, pool: null } as unknown as QueuedMessage;
  return {
    message,
    recipient: { id, messageRowId: id, address: `r${id}@x.test`, domain: 'x.test', attempts: 0, sourceIp },
  };
}

function setup(pools: boolean) {
  const clock = new ManualClock(1_000_000);
  const asked: string[] = [];
  const throttle = new Throttle((key) => {
    asked.push(key);
    return LIMITS;
  });
  const sources = pools
    ? new SourcePicker({
        pools: [POOL],
        defaultPool: POOL,
        customerPools: async () => new Map(),
        clock,
        log: createLogger('silent'),
      })
    : undefined;
  const lanes = new Lanes({ throttle, clock, log: createLogger('silent'), ...(sources ? { sources } : {}) });
  const opened: Array<{ lane: Lane; ids: number[] }> = [];
  const open = (lane: Lane, items: DeliveryItem[]) => {
    throttle.open(lane.key, clock.now(), items.length);
    opened.push({ lane, ids: items.map((i) => i.recipient.id) });
  };
  return { clock, throttle, lanes, asked, opened, open };
}

t.test('without pools: the destination is the one lane, items untouched, no source bound', async (t) => {
  const { lanes, asked, opened, open } = setup(false);
  const list = [1, 2, 3, 4].map((n) => item(n));
  await lanes.tag(list);
  t.ok(
    list.every((i) => i.source === undefined),
    'nothing told at the claim',
  );
  const held = lanes.start('x.test', list, () => true, open);
  t.same(held, [], 'nothing held back: one waits for the connection');
  t.same(
    opened.map((o) => [o.lane.key, o.lane.need, o.ids]),
    [['x.test', undefined, [1, 2]]],
  );
  t.same([...new Set(asked)], ['x.test'], "only the destination's limits are read");
  t.same(
    list.map((i) => i.recipient.id),
    [3, 4],
    'the rest wait for a connection',
  );
  t.same(lanes.keysOf('x.test'), ['x.test']);
});

t.test('with pools: each address has the limits, connections spread over them', async (t) => {
  const { lanes, opened, open } = setup(true);
  const list = [1, 2, 3, 4, 5].map((n) => item(n));
  await lanes.tag(list);
  t.same(list[0]!.source, { pool: POOL, sticky: null });
  lanes.start('x.test', list, () => true, open);
  t.same(
    opened.map((o) => [o.lane.key, o.lane.need?.sticky, o.ids]),
    [
      ['x.test from 192.0.2.1', '192.0.2.1', [1, 2]],
      ['x.test from 192.0.2.2', '192.0.2.2', [3, 4]],
    ],
    'one connection from each address (connections = 1 each)',
  );
  t.same(
    list.map((i) => i.recipient.id),
    [5],
    'the fifth waits',
  );
  t.same(lanes.keysOf('x.test'), ['x.test from 192.0.2.1', 'x.test from 192.0.2.2']);
});

t.test('a retry keeps its address; a paused address is passed over; all paused: held back', async (t) => {
  const { clock, throttle, lanes, opened, open } = setup(true);
  // 192.0.2.1 refused us: paused.
  const ticket = throttle.open('x.test from 192.0.2.1', clock.now(), 1);
  throttle.close(ticket, { delivered: 0, refusal: reply(421, '4.7.0', 'slow down', 'rate_limited') }, clock.now());
  const list = [item(1), item(2, '192.0.2.1'), item(3)];
  await lanes.tag(list);
  const held = lanes.start('x.test', list, () => true, open);
  t.same(
    opened.map((o) => [o.lane.key, o.ids]),
    [['x.test from 192.0.2.2', [1, 3]]],
    'the new ones from the address not paused',
  );
  t.same(
    held.map((h) => h.id),
    [2],
    'the retry waits for its own address',
  );
  t.ok(held[0]!.until >= clock.now() + 30_000, "until that address's pause ends");

  const ticket2 = throttle.open('x.test from 192.0.2.2', clock.now(), 1);
  throttle.close(ticket2, { delivered: 0, refusal: reply(421, '4.7.0', 'slow down', 'rate_limited') }, clock.now());
  const more = [item(4)];
  await lanes.tag(more);
  const all = lanes.start('x.test', more, () => true, open);
  t.same(
    all.map((h) => h.id),
    [4],
    'every address paused: held back',
  );
});

/** A warm-up kept in memory (the store's is tested in the contract suite; this is the lanes' side). */
class MemoryWarmup implements WarmupRoom {
  used = new Map<string, number>();
  givenBack: Array<[string, number]> = [];
  constructor(private readonly caps: Record<string, number>) {}
  capOf(ip: string): number | null {
    return this.caps[ip] ?? null;
  }
  async reserve(wants: ReadonlyArray<{ ip: string; destination: string; n: number }>): Promise<number[]> {
    return wants.map(({ ip, destination, n }) => {
      const key = `${ip} ${destination}`;
      const used = this.used.get(key) ?? 0;
      const granted = Math.max(0, Math.min(n, this.caps[ip]! - used));
      this.used.set(key, used + granted);
      return granted;
    });
  }
  async giveBack(ip: string, destination: string, n: number): Promise<void> {
    const key = `${ip} ${destination}`;
    this.used.set(key, Math.max(0, (this.used.get(key) ?? 0) - n));
    this.givenBack.push([ip, n]);
  }
  nextDay(now: number): number {
    return (Math.floor(now / 86_400_000) + 1) * 86_400_000;
  }
}

function warming(caps: Record<string, number>) {
  const clock = new ManualClock(1_000_000);
  const throttle = new Throttle(() => ({ connections: 10, perConnection: 2, perMinute: 0 }));
  const sources = new SourcePicker({
    pools: [POOL],
    defaultPool: POOL,
    customerPools: async () => new Map(),
    clock,
    log: createLogger('silent'),
  });
  const warmup = new MemoryWarmup(caps);
  const lanes = new Lanes({ throttle, clock, log: createLogger('silent'), sources, warmup });
  const opened: Array<{ ip: string | null | undefined; ids: number[] }> = [];
  const open = (lane: Lane, items: DeliveryItem[]) => {
    throttle.open(lane.key, clock.now(), items.length);
    opened.push({ ip: lane.need?.sticky, ids: items.map((i) => i.recipient.id) });
  };
  const sent = (ip: string) => opened.filter((o) => o.ip === ip).flatMap((o) => o.ids).length;
  return { clock, lanes, warmup, opened, open, sent };
}

t.test("a warming address sends at most its day's room; the rest goes from an address with room", async (t) => {
  const { lanes, warmup, open, sent } = warming({ '192.0.2.1': 3 });
  const list = Array.from({ length: 10 }, (_, i) => item(i + 1));
  await lanes.tag(list);
  await lanes.reserve([{ destination: 'x.test', items: list }]);
  const held = lanes.start('x.test', list, () => true, open);
  await lanes.settle();
  t.same(held, []);
  t.equal(sent('192.0.2.1'), 3, 'the warming address: its cap');
  t.equal(sent('192.0.2.2'), 7, 'the other: the rest');
  t.equal(warmup.used.get('192.0.2.1 x.test'), 3, 'what it sent is counted; nothing over');
});

t.test('every address out of room: the rest waits for the next day, unattempted', async (t) => {
  const { clock, lanes, warmup, open, sent } = warming({ '192.0.2.1': 2, '192.0.2.2': 1 });
  const list = Array.from({ length: 6 }, (_, i) => item(i + 1));
  await lanes.tag(list);
  await lanes.reserve([{ destination: 'x.test', items: list }]);
  const held = lanes.start('x.test', list, () => true, open);
  await lanes.settle();
  t.same([sent('192.0.2.1'), sent('192.0.2.2')], [2, 1]);
  t.same(
    held.map((h) => h.id),
    [4, 5, 6],
  );
  t.ok(
    held.every((h) => h.until === warmup.nextDay(clock.now())),
    'until the next UTC midnight',
  );
});

t.test(
  'a retry whose address has no room left goes from one that has; what a connection did not send is given back',
  async (t) => {
    const { clock, lanes, warmup, opened, open } = warming({ '192.0.2.1': 1 });
    warmup.used.set('192.0.2.1 x.test', 1);
    const list = [item(1, '192.0.2.1')];
    await lanes.tag(list);
    await lanes.reserve([{ destination: 'x.test', items: list }]);
    lanes.start('x.test', list, () => true, open);
    await lanes.settle();
    t.same(opened, [{ ip: '192.0.2.2', ids: [1] }], 'from the address with room');

    warmup.used.clear();
    const more = [item(2), item(3)];
    const before = opened.length;
    await lanes.tag(more);
    await lanes.reserve([{ destination: 'x.test', items: more }]);
    lanes.start('x.test', more, () => true, open);
    await lanes.settle();
    t.same(warmup.givenBack, [], 'all the room reserved was used');
    const first = opened[before]!;
    t.equal(first.ip, '192.0.2.1');
    await lanes.done({ key: 'x.test from 192.0.2.1', need: { pool: POOL, sticky: '192.0.2.1' } }, 1, 0, clock.now());
    t.same(warmup.givenBack, [['192.0.2.1', 1]], 'a connection that sent nothing gives its room back');
    t.equal(warmup.used.get('192.0.2.1 x.test'), 0);
  },
);
