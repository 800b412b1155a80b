import t from 'tap';
import { reply } from '../../../src/domain/outcome.js';
import { pgStore } from '../../../src/store/pg/index.js';
import { testDatabase } from '../../../support/postgres.js';
import { contract, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines: migrations, secrets, the health write, status and the
// overview's counters (kept by each engine's own triggers, which must agree), retention.

const HOUR = 3_600_000;
const policy = { retrySchedule: [60_000], maxQueueTime: 200 * HOUR };

contract('migrations run once; a secret is made once and kept; the health write goes through', async (t, s) => {
  const versions = await s.admin.schemaVersions();
  t.ok(versions.length > 0);
  t.same(await s.admin.migrate(2), [], 'nothing left to apply');
  const a = await s.admin.secret('return_path');
  t.equal(a.length, 32);
  t.same(await s.admin.secret('return_path'), a);
  t.not((await s.admin.secret('other', 16)).toString('hex'), a.toString('hex'));
  await s.admin.touchHealth(5);
  await s.admin.touchHealth(6);
  t.pass('the health write twice');
});

contract(
  "the overview counts accepted recipients and outcome events per hour, as both engines' triggers keep them; status sums the queue",
  async (t, s) => {
    const who = await sender(s);
    const now = 100 * HOUR + 10;
    await send(s, who, { to: ['a@example.net', 'b@example.net'], now: now - 30 * HOUR });
    await send(s, who, { to: ['c@example.net'], now: now - HOUR });
    await send(s, who, { to: ['d@example.net'], now });
    const claimed = (await s.delivery.claim('w', now, 10)).sort((x, y) =>
      x.recipient.address.localeCompare(y.recipient.address),
    );
    await s.delivery.record({
      results: [
        {
          ...claimed[0]!,
          outcome: {
            kind: 'delivered',
            reply: reply(250, '2.0.0', 'ok', 'delivered'),
            mx: 'mx',
            tls: false,
            tlsVerified: false,
          },
        },
        { ...claimed[1]!, outcome: { kind: 'deferred', reply: reply(451, '4.3.0', 'later', 'other') } },
        {
          ...claimed[2]!,
          outcome: {
            kind: 'bounced',
            bounceType: 'hard',
            reply: reply(550, '5.1.1', 'no', 'unknown_recipient'),
            suppress: true,
          },
        },
      ],
      composed: new Map(),
      postpone: [],
      policy,
      now,
    });
    const o = await s.admin.overview(who.customerId, now);
    t.same(o.last24h, { accepted: 2, delivered: 1, deferred: 1, bounced: 1, complained: 0 });
    t.same(o.last7d, { accepted: 4, delivered: 1, deferred: 1, bounced: 1, complained: 0 });
    t.equal(o.hourly.length, 168);
    t.match(o.hourly.at(-1), { hour: 100, accepted: 1, delivered: 1, deferred: 1, bounced: 1 });
    t.match(o.hourly.at(-2), { hour: 99, accepted: 1 });
    t.same(o.queue, { queued: 1, deferred: 1 });
    t.equal(o.oldestDeferredAt, now - 30 * HOUR, 'the oldest deferred message');
    t.equal(o.webhookBacklog, 0);
    const st = await s.admin.status(now);
    t.same(st.queue, { queued: 0, deferred: 1, in_flight: 1 }, 'd is still claimed: in flight');
    t.same(st.recipients, { queued: 1, deferred: 1, delivered: 1, bounced: 1 });
    t.match(st, {
      messages: 3,
      oldest_deferred: new Date(now - 30 * HOUR).toISOString(),
      inbound: { last_24h: 0, total: 0, reports_unmatched: 0 },
      throttled: [],
    });
    t.same(await s.admin.countsByState('recipients'), st.recipients);
    t.same(await s.admin.countsByState('webhook_deliveries'), {});
    t.equal((await s.keys.list(who.customerId))[0]!.last_used_at, now, "a key's last use");
    await send(s, who, { now: now + 30_000 });
    t.equal((await s.keys.list(who.customerId))[0]!.last_used_at, now, 'written at most once a minute');
    await send(s, who, { now: now + 60_001 });
    t.equal((await s.keys.list(who.customerId))[0]!.last_used_at, now + 60_001);
  },
);

contract(
  "status's queue counts the recipients still to be sent (queued, deferred, in flight), never those done",
  async (t, s) => {
    const who = await sender(s);
    const now = 100 * HOUR;
    for (const to of ['a', 'b', 'c', 'd', 'e', 'f']) await send(s, who, { to: [`${to}@example.net`], now });
    await send(s, who, { to: ['later@example.net'], now, scheduledAt: now + 10 * HOUR });
    const claimed = (await s.delivery.claim('w', now, 5)).sort((x, y) =>
      x.recipient.address.localeCompare(y.recipient.address),
    );
    t.equal(claimed.length, 5);
    const [delivered, bounced, deferred] = claimed;
    await s.delivery.record({
      results: [
        {
          ...delivered!,
          outcome: {
            kind: 'delivered',
            reply: reply(250, '2.0.0', 'ok', 'delivered'),
            mx: 'mx',
            tls: false,
            tlsVerified: false,
          },
        },
        {
          ...bounced!,
          outcome: {
            kind: 'bounced',
            bounceType: 'hard',
            reply: reply(550, '5.1.1', 'no', 'unknown_recipient'),
            suppress: false,
          },
        },
        { ...deferred!, outcome: { kind: 'deferred', reply: reply(451, '4.3.0', 'later', 'other') } },
      ],
      composed: new Map(),
      postpone: [],
      policy,
      now,
    });
    let st = await s.admin.status(now);
    t.same(
      st.queue,
      { queued: 2, deferred: 1, in_flight: 2 },
      'one due and one scheduled waiting, one deferred, two held by a node; the delivered and the bounced are not queue',
    );
    t.same(st.recipients, { queued: 4, deferred: 1, delivered: 1, bounced: 1 }, 'every recipient by state');

    // The deferred one and the due queued one claimed as well: in flight, whatever their state.
    t.equal((await s.delivery.claim('w', now + 60_001, 10)).length, 2);
    st = await s.admin.status(now + 60_001);
    t.same(st.queue, { queued: 1, deferred: 0, in_flight: 4 }, 'only the scheduled one waits');
  },
);

contract('retention: the bodies of finished messages and old attempt logs go, the rows stay', async (t, s) => {
  const who = await sender(s);
  const DAY = 24 * HOUR;
  const old = await send(s, who, { now: 1 * DAY });
  const pending = await send(s, who, { now: 1 * DAY, scheduledAt: 100 * DAY });
  const fresh = await send(s, who, { now: 9 * DAY });
  const claimed = await s.delivery.claim('w', 9 * DAY, 10);
  await s.delivery.record({
    results: claimed.map((c) => ({
      ...c,
      outcome: {
        kind: 'delivered',
        reply: reply(250, '2.0.0', 'ok', 'delivered'),
        mx: 'mx',
        tls: false,
        tlsVerified: false,
      },
    })),
    composed: new Map(),
    postpone: [],
    policy,
    now: 9 * DAY,
  });
  t.same(await s.admin.purgeOld(10 * DAY, 0), { messages: 0, attempts: 0 }, 'days 0: nothing');
  t.same(await s.admin.purgeOld(10 * DAY, 7), { messages: 1, attempts: 0 });
  t.same(await s.admin.purgeOld(10 * DAY, 7), { messages: 0, attempts: 0 }, 'purged once');
  await s.delivery.releaseAllClaims();
  const scheduled = (await s.delivery.claim('w', 100 * DAY, 10)).find((c) => c.message.messageId === pending.messageId);
  t.same(JSON.parse(scheduled!.message.request.toString()).subject, 'Your order', 'the unfinished one keeps its body');
  t.ok(await s.messages.get(who.customerId, old.messageId), 'the row stays');
  t.ok(await s.messages.get(who.customerId, fresh.messageId));
});

t.test('postgres: several nodes starting at once on an empty database migrate it once', async (t) => {
  const url = await testDatabase(t);
  const stores = [1, 2, 3, 4].map(() => pgStore(url, { max: 2 }));
  t.teardown(() => Promise.all(stores.map((s) => s.admin.close())));
  const applied = await Promise.all(stores.map((s) => s.admin.migrate(1)));
  t.equal(
    applied.flat().length,
    (await stores[0]!.admin.schemaVersions()).length,
    'each migration applied by one of them',
  );
  t.same(applied.filter((a) => a.length > 0).length, 1);
});
