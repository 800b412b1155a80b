import type { Outcome } from '../../../src/domain/outcome.js';
import { reply } from '../../../src/domain/outcome.js';
import { contract, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines for pools of source addresses (docs/delivery.md, "Sending
// identities"): a customer's pools, a message's chosen pool, and the source address a recipient
// was tried from, kept for its retry and carried by its events.

const policy = { retrySchedule: [60_000], maxQueueTime: 3_600_000 };

contract("a customer's pools: its default and the pools it may choose, changed field by field", async (t, s) => {
  const c = (await s.customers.find('default'))!;
  const other = await s.customers.add('other', 1);
  t.same(await s.customers.pools(), new Map(), 'none set: nobody is listed');
  t.same(await s.customers.setPools(c.id, { defaultPool: 'transactional' }), {
    default_pool: 'transactional',
    allowed_pools: [],
  });
  t.same(
    await s.customers.setPools(c.id, { allowedPools: ['bulk', 'transactional'] }),
    {
      default_pool: 'transactional',
      allowed_pools: ['bulk', 'transactional'],
    },
    'the default kept',
  );
  t.same(
    await s.customers.pools(),
    new Map([[c.id, { default_pool: 'transactional', allowed_pools: ['bulk', 'transactional'] }]]),
  );
  t.same(
    await s.customers.setPools(c.id, { defaultPool: null }),
    {
      default_pool: null,
      allowed_pools: ['bulk', 'transactional'],
    },
    'cleared: the configured default',
  );
  t.notOk((await s.customers.pools()).has(other.id), 'another customer untouched');
});

contract("a change of a customer's pools moves the auth epoch, as a pause does", async (t, s) => {
  const c = (await s.customers.find('default'))!;
  const before = await s.keys.authEpoch();
  await s.customers.setPools(c.id, { allowedPools: ['bulk'] });
  const after = await s.keys.authEpoch();
  t.not(after, before, 'moved: every node reads the pools again before the next send that names one');
  await t.rejects(s.customers.setPools(9999, { allowedPools: ['bulk'] }), /no customer with id 9999/);
  t.equal(await s.keys.authEpoch(), after, 'an unknown customer changes nothing');
});

contract('a message keeps the pool it chose; delivery reads it with the message', async (t, s) => {
  const who = await sender(s);
  const chose = await send(s, who, { pool: 'bulk', to: ['a@example.net'], now: 1000 });
  const plain = await send(s, who, { to: ['b@example.net'], now: 2000 });
  const claimed = await s.delivery.claim('w', 10_000, 10);
  const pools = new Map(claimed.map((c) => [c.message.messageId, c.message.pool]));
  t.same(pools.get(chose.messageId), 'bulk');
  t.same(pools.get(plain.messageId), null, 'none chosen');
  t.same(
    claimed.map((c) => c.recipient.sourceIp),
    [null, null],
    'not yet tried from any address',
  );
});

contract(
  'the source address of an attempt: on its events (pool, source_ip), kept on the row for the retry',
  async (t, s) => {
    const who = await sender(s);
    const m = await send(s, who, { to: ['a@example.net', 'b@example.net'], now: 1000 });
    const first = (await s.delivery.claim('w', 1000, 10)).sort((x, y) =>
      x.recipient.address.localeCompare(y.recipient.address),
    );
    const source = { pool: 'transactional', ip: '127.0.0.2' };
    const deferred: Outcome = { kind: 'deferred', reply: reply(451, '4.7.1', 'greylisted', 'greylisted'), source };
    const delivered: Outcome = {
      kind: 'delivered',
      reply: reply(250, '2.0.0', 'ok', 'delivered'),
      mx: 'mx.example.net',
      tls: false,
      tlsVerified: false,
      source: { pool: 'transactional', ip: '::1' },
    };
    await s.delivery.record({
      results: [
        { ...first[0]!, outcome: deferred },
        { ...first[1]!, outcome: delivered },
      ],
      composed: new Map(),
      postpone: [],
      policy,
      now: 2000,
    });
    const events = (await s.messages.get(who.customerId, m.messageId))!.events;
    t.same(
      events.map((e) => [e.type, e.data.recipient, e.data.pool, e.data.source_ip]),
      [
        ['email.deferred', 'a@example.net', 'transactional', '127.0.0.2'],
        ['email.delivered', 'b@example.net', 'transactional', '::1'],
      ],
    );
    const retry = await s.delivery.claim('w', 2000 + 60_000, 10);
    t.same(
      retry.map((c) => [c.recipient.address, c.recipient.sourceIp, c.recipient.attempts]),
      [['a@example.net', '127.0.0.2', 1]],
      'the retry knows the address it was first tried from',
    );
    // An attempt that went nowhere (no connection, no source) leaves the address as it was.
    await s.delivery.record({
      results: [
        { ...retry[0]!, outcome: { kind: 'deferred', reply: reply(451, '4.4.1', 'no MX', 'connection_failure') } },
      ],
      composed: new Map(),
      postpone: [],
      policy: { ...policy, retrySchedule: [1000] },
      now: 70_000,
    });
    t.same(
      (await s.delivery.claim('w', 80_000, 10)).map((c) => c.recipient.sourceIp),
      ['127.0.0.2'],
    );
  },
);
