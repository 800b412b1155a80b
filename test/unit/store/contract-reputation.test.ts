import type { Outcome } from '../../../src/domain/outcome.js';
import { reply } from '../../../src/domain/outcome.js';
import type { StandingChange, Store } from '../../../src/store/store.js';
import { contract, readEvents, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines for a customer's reputation (store/reputation-store.ts):
// the counters the outcomes' transactions keep (hard bounces, expired apart, sandbox never), a
// change of standing written once with its event, a paused customer's queue not claimed and its
// sends refused by the commit, and a resume that restarts the counters.

const policy = { retrySchedule: [60_000], maxQueueTime: 30_000 };
const HOUR = 3_600_000;
const T0 = 100 * HOUR;
const delivered: Outcome = {
  kind: 'delivered',
  reply: reply(250, '2.0.0', 'ok', 'delivered'),
  mx: 'mx.example.net',
  tls: true,
  tlsVerified: true,
};
const hard: Outcome = {
  kind: 'bounced',
  bounceType: 'hard',
  reply: reply(550, '5.1.1', 'no such user', 'unknown_recipient'),
  suppress: true,
};
const policyBounce: Outcome = {
  kind: 'bounced',
  bounceType: 'hard',
  reply: reply(550, '5.7.1', 'content refused', 'policy'),
  suppress: false,
};
const deferred: Outcome = { kind: 'deferred', reply: reply(451, '4.3.0', 'later', 'other') };

async function deliverAll(s: Store, outcomes: Outcome[], now: number): Promise<void> {
  const claimed = (await s.delivery.claim('w', now, 100)).sort((a, b) => a.recipient.id - b.recipient.id);
  await s.delivery.record({
    results: claimed.map((c, i) => ({ ...c, outcome: outcomes[i]! })),
    composed: new Map(),
    postpone: [],
    policy,
    now,
  });
}

const change = (customerId: number, from: StandingChange['from'], to: StandingChange['to'], now: number) => ({
  customerId,
  from,
  to,
  reason: to === 'paused' ? 'by hand' : null,
  by: 'administrator' as const,
  event: { type: to === 'paused' ? ('customer.paused' as const) : ('customer.resumed' as const), data: { to } },
  now,
});

contract(
  'counters: an outcome each, hard bounces as the suppression policy judges them, expired apart, sandbox never',
  async (t, s) => {
    const who = await sender(s);
    await send(s, who, { to: ['a@example.net', 'b@example.net', 'c@example.net', 'd@example.net'], now: T0 });
    await send(s, who, { to: ['e@example.net'], now: T0, sandbox: true });
    // a delivered, b hard (suppressed), c refused for its content (not the address's fault), d deferred past its queue time: expired.
    const claimed = (await s.delivery.claim('w', T0, 100)).sort((x, y) => x.recipient.id - y.recipient.id);
    await s.delivery.record({
      results: claimed.map((c, i) => ({ ...c, outcome: [delivered, hard, policyBounce, deferred, delivered][i]! })),
      composed: new Map(),
      postpone: [],
      policy,
      now: T0 + 40_000,
    });
    const { counts, standing } = await s.reputation.counts(who.customerId, 0);
    t.same(counts, { rep_outcome: 3, rep_hard: 1, rep_expired: 1, rep_delivered: 1, rep_complained: 0 });
    t.equal(standing.state, 'ok', 'a customer that never changed is ok');
    const hourly = await s.reputation.hourActivity(Math.floor((T0 + 40_000) / HOUR));
    t.equal(hourly.get(who.customerId), 6, "the hour's counters, summed");
    t.same((await s.reputation.counts(who.customerId, Math.floor(T0 / HOUR) + 1)).counts.rep_outcome, 0, 'the window');
  },
);

contract(
  'a change is written once, with its event; the second judge of the same state finds it moved',
  async (t, s) => {
    const who = await sender(s);
    const before = await s.webhooks.fanOutCursor();
    const results = await Promise.all([
      s.reputation.change(change(who.customerId, 'ok', 'paused', T0)),
      s.reputation.change(change(who.customerId, 'ok', 'paused', T0)),
    ]);
    t.same(results.filter(Boolean).length, 1, 'one of two concurrent changes');
    const st = await s.reputation.standing(who.customerId);
    t.match(st, { state: 'paused', paused_at: T0, reason: 'by hand', paused_by: 'administrator' });
    const events = await readEvents(s, 1, before);
    t.same(
      events.map((e) => e.type),
      ['customer.paused'],
    );
    t.notOk(await s.reputation.change(change(who.customerId, 'ok', 'paused', T0)), 'no longer ok');
    t.same(
      (await s.reputation.standings()).map((x) => x.state),
      ['paused'],
    );
  },
);

contract(
  "a paused customer's queue is not claimed, and is after the resume; its commit refuses, its sandbox accepts",
  async (t, s) => {
    const who = await sender(s);
    const staleEpoch = await s.keys.authEpoch();
    await send(s, who, { to: ['a@example.net'], now: T0 });
    t.ok(await s.reputation.change(change(who.customerId, 'ok', 'paused', T0)));
    t.not(await s.keys.authEpoch(), staleEpoch, 'pausing moves the auth epoch');
    t.same(await s.delivery.claim('w', T0 + 10 * HOUR, 10), [], 'held: not claimed');
    const input = {
      customerId: who.customerId,
      apiKeyId: who.keyId,
      messageId: `paused.${process.pid}@example.com`,
      fromHeader: 'shop@example.com',
      senderDomain: 'example.com',
      subject: 's',
      metadata: {},
      request: '{}',
      recipients: [{ address: 'z@example.net', domain: 'example.net', field: 'to' as const }],
      now: T0,
      authEpoch: staleEpoch,
    };
    t.match(await s.messages.accept({ ...input, sandbox: false }), { kind: 'customer_paused', reason: 'by hand' });
    t.match(await s.messages.accept({ ...input, sandbox: true }), { kind: 'accepted' }, 'the sandbox goes on');
    const batch = await s.messages.acceptBatch({
      items: [{ ...input, sandbox: false, messageId: `paused2.${process.pid}@example.com` }],
      customerId: who.customerId,
      apiKeyId: who.keyId,
      authEpoch: staleEpoch,
      now: T0,
    });
    t.match(batch, {
      kind: 'accepted',
      response: { data: [{ refused: { kind: 'customer_paused', reason: 'by hand' } }] },
    });
    t.ok(await s.reputation.change(change(who.customerId, 'paused', 'ok', T0 + HOUR)));
    const claimed = await s.delivery.claim('w', T0 + 10 * HOUR, 10);
    t.same(
      claimed.map((c) => c.recipient.address).sort(),
      ['a@example.net', 'z@example.net'],
      'resumed: its queue is claimed (the sandbox message with it)',
    );
  },
);

contract('a resume restarts the counters: what came before it does not pause again', async (t, s) => {
  const who = await sender(s);
  await send(s, who, { to: ['a@example.net', 'b@example.net'], now: T0 });
  await deliverAll(s, [hard, hard], T0 + 1000);
  t.equal((await s.reputation.counts(who.customerId, 0)).counts.rep_hard, 2);
  t.ok(await s.reputation.change(change(who.customerId, 'ok', 'paused', T0 + 2000)));
  t.ok(await s.reputation.change(change(who.customerId, 'paused', 'ok', T0 + 3000)));
  t.same((await s.reputation.counts(who.customerId, 0)).counts.rep_hard, 0, 'same hour: what it held is subtracted');
  await send(s, who, { to: ['c@example.net'], now: T0 + 4000 });
  await deliverAll(s, [hard], T0 + 5000);
  t.same((await s.reputation.counts(who.customerId, 0)).counts, {
    rep_outcome: 1,
    rep_hard: 1,
    rep_expired: 0,
    rep_delivered: 0,
    rep_complained: 0,
  });
});
