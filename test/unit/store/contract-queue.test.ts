import type { Outcome } from '../../../src/domain/outcome.js';
import { reply } from '../../../src/domain/outcome.js';
import type { Store } from '../../../src/store/store.js';
import { contract, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines: the operator's queue (store/queue-ops.ts): selections,
// retry, hold, release and delete, an attempt in flight meeting them, and held destinations.

const policy = { retrySchedule: [3_600_000], maxQueueTime: 86_400_000 };
const OK = reply(250, '2.0.0', 'ok', 'delivered');
const delivered: Outcome = { kind: 'delivered', reply: OK, mx: 'mx.example.net', tls: true, tlsVerified: true };
const deferred: Outcome = { kind: 'deferred', reply: reply(421, '4.4.2', 'down', 'other') };

type Claimed = Awaited<ReturnType<Store['delivery']['claim']>>;

async function record(s: Store, claimed: Claimed, outcome: Outcome, now: number) {
  await s.delivery.record({
    results: claimed.map((c) => ({ ...c, outcome })),
    composed: new Map(),
    postpone: [],
    policy,
    now,
  });
}

async function rowId(s: Store, customerId: number, messageId: string): Promise<number> {
  return (await s.messages.get(customerId, messageId))!.email_id;
}

const states = async (s: Store, customerId: number, messageId: string) =>
  (await s.messages.get(customerId, messageId))!.recipients.map((r) => [r.address, r.state, r.attempts]);

/** A message to `to`, tried once at 1000 and deferred (next attempt at 3,601,000). */
async function deferredMessage(s: Store, who: { customerId: number; keyId: string }, to: string[]) {
  const m = await send(s, who, { to, now: 1000 });
  const claimed = (await s.delivery.claim('w', 1000, 100)).filter((c) => c.message.messageId === m.messageId);
  await record(s, claimed, deferred, 1000);
  return m;
}

contract(
  'retry: the deferred become due now, attempts and acceptance untouched; dry run changes nothing',
  async (t, s) => {
    const who = await sender(s);
    const m = await deferredMessage(s, who, ['a@example.net', 'b@example.org']);
    const scheduled = await send(s, who, { to: ['c@example.net'], now: 1000, scheduledAt: 9_000_000 });
    t.same(await s.delivery.claim('w', 5000, 10), [], 'nothing due at 5000');
    const dry = await s.queue.apply('retry', {}, 5000, true);
    t.same(dry, { op: 'retry', changed: 2, in_flight: 0 }, 'dry: what would change');
    t.same(await s.delivery.claim('w', 5000, 10), [], 'dry: nothing changed');
    const sel = { messageRowId: await rowId(s, who.customerId, m.messageId), destination: 'example.org' };
    t.same(await s.queue.apply('retry', sel, 5000, false), { op: 'retry', changed: 1, in_flight: 0 });
    const due = await s.delivery.claim('w', 5000, 10);
    t.same(
      due.map((c) => [c.recipient.address, c.recipient.attempts]),
      [['b@example.org', 1]],
      'due now, the attempt not counted',
    );
    t.same((await s.queue.apply('retry', {}, 5000, false)).changed, 1, 'the other deferred; not the scheduled one');
    t.same((await s.delivery.claim('w', 5000, 10)).length, 1);
    t.same(await states(s, who.customerId, scheduled.messageId), [['c@example.net', 'queued', 0]]);
    t.same((await s.queue.apply('retry', {}, 5000, false)).changed, 0, 'in flight: left to its delivery');
  },
);

contract(
  'retry: what its destination held back is due too; the destinations noted and their stored pause lifted',
  async (t, s) => {
    const who = await sender(s);
    await s.delivery.noteDestination('example.net', 'provider.test', 500);
    const m = await deferredMessage(s, who, ['a@example.net']);
    // Claimed and held back by its destination's pause (queued, never tried), and a scheduled one.
    const backed = await send(s, who, { to: ['b@example.net'], now: 1000 });
    const claimed = (await s.delivery.claim('w', 1000, 10)).filter((c) => c.message.messageId === backed.messageId);
    await s.delivery.postpone([{ id: claimed[0]!.recipient.id, until: 900_000 }]);
    await send(s, who, { to: ['c@example.net'], now: 1000, scheduledAt: 9_000_000 });
    const pause = { connections: 1, strikes: 1, reason: reply(421, '4.7.0', 'slow down', 'rate_limited'), since: 1000 };
    const set = (destination: string) =>
      s.delivery.setThrottle({ kind: 'set', record: { destination, pausedUntil: 31_000, ...pause } }, 1000, 'node-a');
    await set('provider.test');
    await set('other.test');
    t.same(await s.delivery.retriedAt(['provider.test']), new Map(), 'never retried');
    t.same((await s.queue.apply('retry', { destination: 'provider.test' }, 5000, true)).changed, 2, 'dry');
    t.same(await s.delivery.retriedAt(['provider.test']), new Map(), 'dry: nothing noted');
    t.same((await s.queue.apply('retry', { destination: 'provider.test' }, 5000, false)).changed, 2);
    const due = await s.delivery.claim('w', 5000, 10);
    t.same(
      due.map((c) => c.recipient.address).sort(),
      ['a@example.net', 'b@example.net'],
      'both due now; the scheduled one waits for its time',
    );
    await record(s, due, deferred, 5000);
    t.same(await s.delivery.retriedAt(['provider.test', 'other.test']), new Map([['provider.test', 5000]]));
    const stored = new Map((await s.delivery.throttles('node-a')).map((x) => [x.destination, x.pausedUntil]));
    t.same(
      [stored.get('provider.test'), stored.get('other.test')],
      [5000, 31_000],
      'its stored pause ends at the retry',
    );
    await s.queue.apply('retry', { messageRowId: await rowId(s, who.customerId, m.messageId) }, 6000, false);
    t.same(await s.delivery.retriedAt(['provider.test']), new Map([['provider.test', 6000]]), 'a retry by message too');
  },
);

contract('list: waiting recipients by state, message, recipient, destination, customer and age', async (t, s) => {
  const who = await sender(s);
  const m = await deferredMessage(s, who, ['a@example.net', 'B@example.org']);
  await send(s, who, { to: ['c@example.net'], now: 2000, scheduledAt: 9_000_000 });
  await s.delivery.noteDestination('example.net', 'mx-host.net', 3000);
  const all = await s.queue.list({}, 10);
  t.same(
    all.map((e) => [e.address, e.state, e.attempts, e.destination, e.in_flight]),
    [
      ['a@example.net', 'deferred', 1, 'mx-host.net', false],
      ['B@example.org', 'deferred', 1, 'example.org', false],
      ['c@example.net', 'queued', 0, 'mx-host.net', false],
    ],
  );
  t.match(all[0], { message_id: m.messageId, customer: 'default', next_attempt_at: 3_601_000, accepted_at: 1000 });
  t.match(JSON.parse(all[0]!.last_response!), { code: 421 });
  const addrs = async (sel: Parameters<Store['queue']['list']>[0]) =>
    (await s.queue.list(sel, 10)).map((e) => e.address);
  t.same(await addrs({ state: 'queued' }), ['c@example.net']);
  t.same(await addrs({ state: 'deferred' }), ['a@example.net', 'B@example.org']);
  t.same(await addrs({ destination: 'mx-host.net' }), ['a@example.net', 'c@example.net']);
  t.same(await addrs({ destination: 'example.org' }), ['B@example.org'], 'a domain never looked up: its own');
  t.same(await addrs({ destination: 'example.net' }), [], 'looked up: its destination, not its name');
  await s.delivery.noteDestination('example.org', 'mx-host.net', 3000);
  t.same(await addrs({ destination: 'mx-host.net' }), ['a@example.net', 'B@example.org', 'c@example.net']);
  await s.delivery.noteDestination('example.org', 'example.org', 3500);
  t.same(await addrs({ destination: 'example.org' }), ['B@example.org'], 'its own again: what was kept is forgotten');
  t.same(await addrs({ destination: 'mx-host.net' }), ['a@example.net', 'c@example.net']);
  t.same(await addrs({ recipient: 'b@example.org' }), [], 'as sent');
  t.same(await addrs({ recipient: 'B@example.org' }), ['B@example.org']);
  t.same(await addrs({ messageRowId: await rowId(s, who.customerId, m.messageId) }), [
    'a@example.net',
    'B@example.org',
  ]);
  t.same(await addrs({ customerId: who.customerId + 1000 }), []);
  t.same(await addrs({ acceptedBefore: 1500 }), ['a@example.net', 'B@example.org']);
  t.same(await addrs({}).then((a) => a.length), 3);
  t.same((await s.queue.list({}, 1)).length, 1, 'at most the limit');
  await s.queue.apply('hold', { recipient: 'a@example.net' }, 4000, false);
  t.same(await addrs({ state: 'held' }), ['a@example.net']);
  t.same(await addrs({ state: 'deferred' }), ['B@example.org'], 'held: no longer deferred');
  t.match((await s.queue.list({ state: 'held' }, 10))[0], { state: 'held', held_at: 4000, next_attempt_at: null });
});

contract('hold and release: held is never claimed, released is due now (a scheduled one at its time)', async (t, s) => {
  const who = await sender(s);
  const m = await send(s, who, { to: ['a@example.net'], now: 1000 });
  const later = await send(s, who, { to: ['b@example.net'], now: 1000, scheduledAt: 50_000 });
  t.same(await s.queue.apply('hold', {}, 2000, false), { op: 'hold', changed: 2, in_flight: 0 });
  t.same(await s.delivery.claim('w', 100_000_000, 10), [], 'held: never claimed, however late');
  t.same((await s.queue.apply('hold', {}, 2000, false)).changed, 0, 'held twice: nothing more');
  t.same((await s.queue.apply('retry', {}, 2000, false)).changed, 0, 'retry leaves the held alone');
  t.same(await states(s, who.customerId, m.messageId), [['a@example.net', 'queued', 0]], 'state kept');
  t.same(await s.queue.apply('release', {}, 3000, false), { op: 'release', changed: 2, in_flight: 0 });
  t.same(
    (await s.delivery.claim('w', 3000, 10)).map((c) => c.message.messageId),
    [m.messageId],
    'released: due now',
  );
  t.same(
    (await s.delivery.claim('w', 50_000, 10)).map((c) => c.message.messageId),
    [later.messageId],
    'the scheduled one at its time',
  );
});

contract('delete: the waiting become canceled, the delivered and bounced are never changed', async (t, s) => {
  const who = await sender(s);
  const m = await send(s, who, { to: ['a@example.net', 'b@example.net', 'c@example.net'], now: 1000 });
  const claimed = (await s.delivery.claim('w', 1000, 10)).sort((x, y) =>
    x.recipient.address.localeCompare(y.recipient.address),
  );
  await record(s, [claimed[0]!], delivered, 1000);
  await record(s, [claimed[1]!], deferred, 1000);
  await s.delivery.releaseClaims([claimed[2]!.recipient.id]);
  const sel = { messageRowId: await rowId(s, who.customerId, m.messageId) };
  t.same((await s.queue.apply('delete', sel, 2000, true)).changed, 2, 'dry');
  t.same(await s.queue.apply('delete', sel, 2000, false), { op: 'delete', changed: 2, in_flight: 0 });
  t.same(await states(s, who.customerId, m.messageId), [
    ['a@example.net', 'delivered', 1],
    ['b@example.net', 'canceled', 1],
    ['c@example.net', 'canceled', 0],
  ]);
  t.same(
    (await s.messages.get(who.customerId, m.messageId))!.events.map((e) => e.type),
    ['email.delivered', 'email.deferred'],
    'no event of its own, as a canceled message',
  );
  t.same(await s.delivery.claim('w', 100_000_000, 10), []);
  t.same((await s.queue.apply('delete', sel, 2000, false)).changed, 0, 'again: nothing left');
});

contract('in flight: the attempt finishes; a hold or delete made meanwhile outlives a deferral', async (t, s) => {
  const who = await sender(s);
  const m = await send(s, who, { to: ['a@example.net', 'b@example.net', 'c@example.net', 'd@example.net'], now: 1000 });
  const claimed = (await s.delivery.claim('w', 1000, 10)).sort((x, y) =>
    x.recipient.address.localeCompare(y.recipient.address),
  );
  const [a, b, c, d] = claimed;
  t.same(await s.queue.apply('hold', { recipient: 'a@example.net' }, 2000, false), {
    op: 'hold',
    changed: 1,
    in_flight: 1,
  });
  await s.queue.apply('hold', { recipient: 'b@example.net' }, 2000, false);
  await s.queue.apply('delete', { recipient: 'c@example.net' }, 2000, false);
  t.same((await s.queue.apply('delete', { recipient: 'd@example.net' }, 2000, false)).in_flight, 1);
  await record(s, [a!, c!], deferred, 3000);
  await record(s, [b!, d!], delivered, 3000);
  t.same(await states(s, who.customerId, m.messageId), [
    ['a@example.net', 'deferred', 1],
    ['b@example.net', 'delivered', 1],
    ['c@example.net', 'canceled', 1],
    ['d@example.net', 'delivered', 1],
  ]);
  t.same(
    (await s.queue.list({}, 10)).map((e) => [e.address, e.state, e.next_attempt_at]),
    [['a@example.net', 'held', null]],
    'the held one stays held after its deferral',
  );
  t.same(await s.delivery.claim('w', 100_000_000, 10), [], 'nothing claimable');
  t.same((await s.queue.apply('release', {}, 4000, false)).changed, 1);
  t.same(
    (await s.delivery.claim('w', 4000, 10)).map((x) => x.recipient.address),
    ['a@example.net'],
  );
});

contract(
  'in flight: a deferral after a delete or hold announces no next attempt; a delete none at all',
  async (t, s) => {
    const who = await sender(s);
    const m = await send(s, who, { to: ['a@example.net', 'b@example.net', 'c@example.net'], now: 1000 });
    const [a, b, c] = (await s.delivery.claim('w', 1000, 10)).sort((x, y) =>
      x.recipient.address.localeCompare(y.recipient.address),
    );
    await s.queue.apply('delete', { recipient: 'a@example.net' }, 2000, false);
    await s.queue.apply('hold', { recipient: 'b@example.net' }, 2000, false);
    await record(s, [a!, b!, c!], deferred, 3000);
    const view = (await s.messages.get(who.customerId, m.messageId))!;
    t.same(
      view.recipients.map((r) => [r.address, r.state, r.attempts, r.next_attempt_at === null]),
      [
        ['a@example.net', 'canceled', 1, true],
        ['b@example.net', 'deferred', 1, true],
        ['c@example.net', 'deferred', 1, false],
      ],
      "the attempt counted; the operator's change kept",
    );
    const deferrals = view.events
      .filter((e) => e.type === 'email.deferred')
      .map((e) => [e.data.recipient, e.data.next_attempt_at]);
    t.same(
      deferrals,
      [
        ['b@example.net', null],
        ['c@example.net', new Date(3000 + 3_600_000).toISOString()],
      ],
      'the deleted one: no email.deferred; the held one: no next attempt announced',
    );
  },
);

contract('held destinations: a rule, and what waits for it held; claimed ones held back; release', async (t, s) => {
  const who = await sender(s);
  await s.delivery.noteDestination('hosted.example', 'outlook.com', 500);
  const m = await deferredMessage(s, who, ['a@hosted.example', 'b@other.example']);
  const hold = await s.queue.apply('hold', { destination: 'Outlook.com' }, 2000, false);
  t.same(hold, {
    op: 'hold',
    changed: 1,
    in_flight: 0,
    rule: { destination: 'outlook.com', held: true, changed: true },
  });
  t.same((await s.queue.apply('hold', { destination: 'outlook.com' }, 2000, false)).rule?.changed, false, 'again');
  t.same(await s.queue.heldDestinations(), [{ destination: 'outlook.com', held_at: 2000 }]);
  t.same(await s.delivery.heldDestinations(), ['outlook.com']);
  // Accepted while held, for a domain not yet looked up: claimed, then held back by the scheduler.
  const fresh = await send(s, who, { to: ['c@new.example'], now: 3000 });
  const claimed = await s.delivery.claim('w', 3000, 10);
  t.same(
    claimed.map((c) => c.recipient.address),
    ['c@new.example'],
  );
  await s.delivery.noteDestination('new.example', 'outlook.com', 3000);
  await s.delivery.holdClaimed([claimed[0]!.recipient.id], 3000);
  t.same(
    (await s.queue.list({ state: 'held' }, 10)).map((e) => [e.address, e.destination]),
    [
      ['a@hosted.example', 'outlook.com'],
      ['c@new.example', 'outlook.com'],
    ],
  );
  t.same(await s.delivery.claim('w', 100_000_000, 10).then((x) => x.map((c) => c.recipient.address)), [
    'b@other.example',
  ]);
  const dry = await s.queue.apply('release', { destination: 'outlook.com' }, 4000, true);
  t.same(dry.rule, { destination: 'outlook.com', held: false, changed: true }, 'dry: would remove it');
  t.same(await s.delivery.heldDestinations(), ['outlook.com'], 'dry: kept');
  const release = await s.queue.apply('release', { destination: 'outlook.com' }, 4000, false);
  t.same([release.changed, release.rule?.changed], [2, true]);
  t.same(await s.queue.heldDestinations(), []);
  t.same(
    (await s.delivery.claim('w', 4000, 10)).map((c) => c.recipient.address).sort(),
    ['a@hosted.example', 'c@new.example'],
    'released: due now',
  );
  t.ok(m && fresh);
});
