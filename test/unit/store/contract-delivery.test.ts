import type { Outcome } from '../../../src/domain/outcome.js';
import { reply } from '../../../src/domain/outcome.js';
import { SIMULATOR_DOMAIN, sandboxSteps } from '../../../src/domain/sandbox.js';
import type { GroupRecord, Store } from '../../../src/store/store.js';
import { contract, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines: the delivery queue (claims, outcomes with their events
// and suppressions, the composed copy, holding back, releasing, throttles) and the sandbox.

const policy = { retrySchedule: [60_000, 300_000], maxQueueTime: 3_600_000 };
const OK = reply(250, '2.0.0', 'ok', 'delivered');
const delivered: Outcome = { kind: 'delivered', reply: OK, mx: 'mx.example.net', tls: true, tlsVerified: true };

async function record(
  s: Store,
  claimed: Awaited<ReturnType<Store['delivery']['claim']>>,
  outcomes: Outcome[],
  now: number,
  extra: Partial<GroupRecord> = {},
) {
  await s.delivery.record({
    results: claimed.map((c, i) => ({ ...c, outcome: outcomes[i]! })),
    composed: new Map(),
    postpone: [],
    policy,
    now,
    ...extra,
  });
}

const types = async (s: Store, customerId: number, messageId: string) =>
  (await s.messages.get(customerId, messageId))!.events.map((e) => `${e.type} ${e.data.recipient}`);

contract(
  'claims: earliest due first, at most the limit, never twice, none before due; released ones come back',
  async (t, s) => {
    const who = await sender(s);
    const a = await send(s, who, { now: 3000 });
    const b = await send(s, who, { now: 1000 });
    await send(s, who, { now: 2000, scheduledAt: 50_000 });
    const first = await s.delivery.claim('w1', 10_000, 1);
    t.same(
      first.map((c) => c.message.messageId),
      [b.messageId],
      'the earliest due',
    );
    t.match(first[0], {
      recipient: { address: 'bob@example.net', domain: 'example.net', attempts: 0 },
      message: { sandbox: false, subject: 'Your order', metadata: { order: '1' }, tags: [] },
    });
    t.ok(Buffer.isBuffer(first[0]!.message.request), 'the request as stored, bytes');
    t.same(JSON.parse(first[0]!.message.request.toString()).subject, 'Your order');
    const second = await s.delivery.claim('w2', 10_000, 10);
    t.same(
      second.map((c) => c.message.messageId),
      [a.messageId],
      'the rest, not the claimed one, nor the scheduled one',
    );
    t.same(await s.delivery.claim('w3', 10_000, 10), []);
    await s.delivery.releaseClaims([first[0]!.recipient.id]);
    t.same(
      (await s.delivery.claim('w3', 10_000, 10)).map((c) => c.message.messageId),
      [b.messageId],
      'released: claimed again',
    );
    t.equal(await s.delivery.releaseAllClaims(), 2, 'at start, every claim');
    t.equal((await s.delivery.claim('w4', 60_000, 10)).length, 3);
  },
);

contract(
  'outcomes: delivered, deferred with its retry, expired, bounced with a suppression and recipient.suppressed once per address',
  async (t, s) => {
    const who = await sender(s);
    const m = await send(s, who, {
      to: ['a@example.net', 'b@example.net', 'c@example.net', 'd@example.net'],
      now: 1000,
    });
    const claimed = (await s.delivery.claim('w', 1000, 10)).sort((x, y) =>
      x.recipient.address.localeCompare(y.recipient.address),
    );
    const deferred = reply(451, '4.3.0', 'try later', 'other');
    const bounced = reply(550, '5.1.1', 'no such user', 'unknown_recipient');
    await record(
      s,
      claimed,
      [
        delivered,
        { kind: 'deferred', reply: deferred },
        { kind: 'bounced', bounceType: 'hard', reply: bounced, suppress: true },
        { kind: 'bounced', bounceType: 'hard', reply: bounced, suppress: false },
      ],
      5000,
    );
    const view = (await s.messages.get(who.customerId, m.messageId))!;
    t.same(
      view.recipients.map((r) => [r.address, r.state, r.attempts, r.next_attempt_at]),
      [
        ['a@example.net', 'delivered', 1, null],
        ['b@example.net', 'deferred', 1, new Date(65_000).toISOString()],
        ['c@example.net', 'bounced', 1, null],
        ['d@example.net', 'bounced', 1, null],
      ],
    );
    t.same(view.recipients[1]!.last_response, deferred);
    t.same(await types(s, who.customerId, m.messageId), [
      'email.delivered a@example.net',
      'email.deferred b@example.net',
      'email.bounced c@example.net',
      'recipient.suppressed c@example.net',
      'email.bounced d@example.net',
    ]);
    t.match(view.events[0]!.data, {
      email_id: view.email_id,
      message_id: m.messageId,
      from: 'Shop <shop@example.com>',
      mx: 'mx.example.net',
      tls: true,
      tls_verified: true,
      attempt: 1,
      response: { code: 250 },
    });
    t.notOk(
      'classification' in (view.events[0]!.data.response as object),
      'a delivery event carries the reply without its classification',
    );
    t.match(view.events[1]!.data, { attempt: 1, next_attempt_at: new Date(65_000).toISOString() });
    t.same(
      [...(await s.suppressions.find(who.customerId, ['c@example.net', 'd@example.net'])).keys()],
      ['c@example.net'],
    );
    // The deferred one, retried past max_queue_time: bounced as expired, not suppressed.
    const retry = await s.delivery.claim('w', 65_000, 10);
    t.same(
      retry.map((c) => [c.recipient.address, c.recipient.attempts]),
      [['b@example.net', 1]],
    );
    await record(s, retry, [{ kind: 'deferred', reply: deferred }], 3_600_000);
    const b = (await s.messages.get(who.customerId, m.messageId))!.recipients[1]!;
    t.same([b.state, b.attempts], ['bounced', 2]);
    t.match(b.last_response, { code: 451, message: /^Gave up after max_queue_time; last reply: 451 try later/ });
    t.match((await s.messages.get(who.customerId, m.messageId))!.events.at(-1), {
      type: 'email.bounced',
      data: { bounce_type: 'expired' },
    });
    // A second message to the suppressed address bounced again: no second recipient.suppressed.
    const again = await send(s, { ...who }, { to: ['e@example.net'], now: 4_000_000 });
    await s.suppressions.remove(who.customerId, 'e@example.net');
    const c2 = await s.delivery.claim('w', 4_000_000, 10);
    await s.suppressions.add({ customerId: who.customerId, address: 'e@example.net', reason: 'manual', now: 1 });
    await record(s, c2, [{ kind: 'bounced', bounceType: 'hard', reply: bounced, suppress: true }], 4_000_001);
    t.same(
      await types(s, who.customerId, again.messageId),
      ['email.bounced e@example.net'],
      'already on the list: no recipient.suppressed',
    );
  },
);

contract(
  'the composed copy is kept while a recipient may be retried and dropped when the last is done; its size stays',
  async (t, s) => {
    const who = await sender(s);
    const m = await send(s, who, { to: ['a@example.net', 'b@example.org'], now: 1000 });
    const claimed = await s.delivery.claim('w', 1000, 10);
    const ofA = claimed.filter((c) => c.recipient.address === 'a@example.net');
    const ofB = claimed.filter((c) => c.recipient.address === 'b@example.org');
    const raw = Buffer.from('Subject: x\r\n\r\nbody\r\n');
    await record(s, ofA, [delivered], 2000, { composed: new Map([[ofA[0]!.message.id, raw]]) });
    t.equal((await s.messages.get(who.customerId, m.messageId))!.size, raw.length);
    const again = await s.delivery.claim('w', 2000, 10);
    t.equal(again.length, 0, 'b still claimed');
    await s.delivery.releaseClaims(ofB.map((c) => c.recipient.id));
    const retry = await s.delivery.claim('w', 2000, 10);
    t.same(retry[0]!.message.raw, raw, 'kept for the recipient still to send to');
    await record(s, retry, [delivered], 3000);
    await s.delivery.releaseAllClaims();
    const last = await send(s, who, { to: ['z@example.net'], now: 4000 });
    const [z] = await s.delivery.claim('w', 4000, 10);
    await record(s, [z!], [delivered], 4001, { composed: new Map([[z!.message.id, raw]]) });
    t.equal((await s.messages.get(who.customerId, last.messageId))!.size, raw.length, 'size kept');
    const again2 = await send(s, who, { to: ['y@example.net', 'x@example.org'], now: 5000 });
    const pair = await s.delivery.claim('w', 5000, 10);
    await record(s, pair, [delivered, delivered], 5001, { composed: new Map([[pair[0]!.message.id, raw]]) });
    t.equal((await s.messages.get(who.customerId, again2.messageId))!.size, raw.length);
  },
);

contract(
  'held back: the claim released and the recipient due later, its state and attempts untouched; throttles kept and cleared',
  async (t, s) => {
    const who = await sender(s);
    const m = await send(s, who, { to: ['a@example.net', 'b@example.net'], now: 1000 });
    const claimed = await s.delivery.claim('w', 1000, 10);
    await s.delivery.postpone(claimed.map((c) => ({ id: c.recipient.id, until: 90_000 })));
    t.same(await s.delivery.claim('w', 89_999, 10), []);
    const later = await s.delivery.claim('w', 90_000, 10);
    t.equal(later.length, 2);
    t.same(
      (await s.messages.get(who.customerId, m.messageId))!.recipients.map((r) => [r.state, r.attempts]),
      [
        ['queued', 0],
        ['queued', 0],
      ],
    );
    const throttle = {
      destination: 'outlook.com',
      connections: 2,
      strikes: 1,
      pausedUntil: 120_000,
      reason: reply(421, '4.7.0', 'slow down', 'rate_limited'),
      since: 90_000,
    };
    await record(s, later.slice(0, 1), [delivered], 90_001, {
      postpone: [{ id: later[1]!.recipient.id, until: 200_000 }],
    });
    await s.delivery.setThrottle({ kind: 'set', record: throttle }, 90_001, '');
    t.same(await s.delivery.throttles(), [throttle]);
    t.same(await s.delivery.claim('w', 199_999, 10), [], 'the unattempted one held back with the group');
    t.match(await s.admin.status(100_000), {
      throttled: [{ destination: 'outlook.com', connections: 2, refusals: 1, reason: { code: 421 } }],
    });
    await s.delivery.setThrottle({ kind: 'cleared', destination: 'outlook.com' }, 100_001, '');
    t.same(await s.delivery.throttles(), []);
  },
);

contract(
  'the sandbox: every simulated outcome fires its events, a complaint once, and the real list is never touched',
  async (t, s) => {
    const who = await sender(s);
    const to = ['bounced', 'async-bounced', 'complained', 'deferred', 'someone'].map((l) => `${l}@${SIMULATOR_DOMAIN}`);
    const m = await send(s, who, { to, sandbox: true, now: 1000 });
    const claimed = await s.delivery.claim('w', 1000, 10);
    const steps = claimed.map((c) => ({ ...c, steps: sandboxSteps(c.recipient.address, c.recipient.attempts) }));
    await s.delivery.recordSandbox(steps, policy, 2000);
    const view = (await s.messages.get(who.customerId, m.messageId))!;
    t.same(
      view.recipients.map((r) => [r.address.split('@')[0], r.state]),
      [
        ['bounced', 'bounced'],
        ['async-bounced', 'bounced'],
        ['complained', 'complained'],
        ['deferred', 'deferred'],
        ['someone', 'delivered'],
      ],
    );
    t.equal(view.recipients[1]!.attempts, 1, 'the late bounce counts no attempt');
    t.same((await types(s, who.customerId, m.messageId)).map((x) => x.split('@')[0]).sort(), [
      'email.bounced async-bounced',
      'email.bounced bounced',
      'email.complained complained',
      'email.deferred deferred',
      'email.delivered async-bounced',
      'email.delivered complained',
      'email.delivered someone',
      'recipient.suppressed async-bounced',
      'recipient.suppressed bounced',
      'recipient.suppressed complained',
    ]);
    t.same(await s.suppressions.list(who.customerId, { limit: 10 }), [], 'the sandbox never suppresses for real');
    t.ok(
      view.events.filter((e) => e.type === 'recipient.suppressed').every((e) => e.data.sandbox === true),
      'and says so',
    );
    // The complaint again (the simulator runs once per attempt; a report could repeat it): once.
    const complained = claimed.find((c) => c.recipient.address.startsWith('complained'))!;
    await s.delivery.recordSandbox(
      [{ ...complained, steps: [{ kind: 'complaint', feedbackType: 'abuse', userAgent: 'x' }] }],
      policy,
      3000,
    );
    t.equal((await types(s, who.customerId, m.messageId)).filter((x) => x.startsWith('email.complained')).length, 1);
  },
);
