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
import { type Lane, Lanes } from '../../../src/outbound/lanes.js';
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
  const lanes = new Lanes({ throttle, clock, ...(sources ? { sources } : {}) });
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
