import type { AttemptRecord, ClaimRoom, SettledAttempt } from '../../../src/store/model.js';
import type { Store } from '../../../src/store/store.js';
import { contract, readEvents, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines: webhook endpoints, the outbox read in fan-out order,
// attempts recorded with the rows of deliveries fanned out in memory, claims within each
// endpoint's room, replays and the attempt log.

const attempt = (endpointId: string, eventId: string, n: number, at: number, status: number | null): AttemptRecord => ({
  endpointId,
  deliveryId: null,
  eventId,
  eventType: 'email.delivered',
  attempt: n,
  at,
  status,
  error: status === null ? 'timeout' : null,
  durationMs: 12,
  response: status === null ? null : 'ok',
});

const settled = (
  endpointId: string,
  e: { id: string; seq: number },
  state: SettledAttempt['state'],
  deliveryId: number | null = null,
  n = 1,
): SettledAttempt => ({
  attempt: { ...attempt(endpointId, e.id, n, 100, state === 'succeeded' ? 200 : 500), deliveryId },
  deliveryId,
  eventSeq: e.seq,
  state,
  nextAt: state === 'pending' ? 5000 : null,
  disableEndpoint: false,
});

const unlimited: ClaimRoom = { room: () => 100, take: () => {} };

async function events(s: Store, n: number) {
  const who = await sender(s);
  for (let i = 0; i < n; i++)
    await s.inbound.recordLimited(
      {
        id: (await s.domains.add({ customerId: who.customerId, name: `d${i}.example`, receiving: true, now: 1 })).id,
        customerId: who.customerId,
        name: `d${i}`,
        ratePerMinute: null,
        monthlyLimit: null,
      },
      'rate',
      1,
      10 + i,
    );
  return { who, list: await readEvents(s, n) };
}

contract('endpoints: created, listed newest first, found per customer, disabled and enabled, deleted', async (t, s) => {
  const who = await sender(s);
  const a = await s.webhooks.createEndpoint({
    customerId: who.customerId,
    url: 'https://a.example/hook',
    events: ['email.bounced'],
    description: 'A',
    secret: 'whsec_a',
    now: 10,
  });
  const b = await s.webhooks.createEndpoint({
    customerId: who.customerId,
    url: 'https://b.example/hook',
    events: null,
    description: '',
    secret: 'whsec_b',
    now: 20,
  });
  t.match(a, {
    id: /^wh_/,
    url: 'https://a.example/hook',
    events: ['email.bounced'],
    description: 'A',
    secret: 'whsec_a',
    enabled: true,
    disabledReason: null,
    createdAt: 10,
  });
  t.same(
    (await s.webhooks.listEndpoints(who.customerId)).map((e) => e.id),
    [b.id, a.id],
  );
  t.same(await s.webhooks.getEndpoint(a.id, who.customerId), a);
  t.equal(await s.webhooks.getEndpoint(a.id, who.customerId + 1), undefined);
  await s.webhooks.disableEndpoint(a.id, 'by hand');
  t.match(await s.webhooks.getEndpoint(a.id), { enabled: false, disabledReason: 'by hand' });
  t.same(await s.webhooks.enabledEndpointIds(), [b.id]);
  await s.webhooks.enableEndpoint(a.id);
  t.same((await s.webhooks.enabledEndpointIds()).sort(), [a.id, b.id].sort());
  await s.webhooks.deleteEndpoint(b.id);
  t.same(
    (await s.webhooks.listEndpoints()).map((e) => e.id),
    [a.id],
  );
});

contract(
  'the outbox: events after a position, in order, at most the limit; the cursor moves forward only, with recorded attempts',
  async (t, s) => {
    const { who, list } = await events(s, 5);
    t.equal(list.length, 5);
    t.same(
      list.map((e) => e.seq),
      [...list.map((e) => e.seq)].sort((x, y) => x - y),
      'in seq order when written one after another',
    );
    t.same(
      (await s.webhooks.eventsAfter(list[2]!.pos, 10)).map((e) => e.id),
      list.slice(3).map((e) => e.id),
    );
    t.equal((await s.webhooks.eventsAfter(list[0]!.pos, 1)).length, 1);
    t.match(list[4], { id: /^msg_/, customerId: who.customerId, type: 'inbound.limited', createdAt: 14 });
    const a = await s.webhooks.createEndpoint({
      customerId: who.customerId,
      url: 'https://a.example/',
      events: null,
      description: '',
      secret: 's',
      now: 0,
    });
    const b = await s.webhooks.createEndpoint({
      customerId: who.customerId,
      url: 'https://b.example/',
      events: null,
      description: '',
      secret: 's',
      now: 0,
    });
    const gone = await s.webhooks.createEndpoint({
      customerId: who.customerId,
      url: 'https://c.example/',
      events: null,
      description: '',
      secret: 's',
      now: 0,
    });
    await s.webhooks.deleteEndpoint(gone.id);
    const start = await s.webhooks.fanOutCursor();
    t.same(await s.webhooks.lastFannedOut(start), start, 'no delivery rows yet');
    await s.webhooks.recordAttempts({
      batch: [
        settled(a.id, list[0]!, 'succeeded'),
        settled(a.id, list[1]!, 'pending'),
        settled(gone.id, list[0]!, 'succeeded'),
      ],
      pending: [
        { endpointId: b.id, eventSeq: list[0]!.seq },
        { endpointId: gone.id, eventSeq: list[1]!.seq },
      ],
      cursor: list[1]!.pos,
      now: 100,
    });
    t.same(await s.webhooks.fanOutCursor(), list[1]!.pos);
    t.same(await s.webhooks.lastFannedOut(start), list[1]!.pos, 'the last event with a row');
    t.ok(await s.webhooks.hasDelivery(list[0]!.seq, b.id));
    t.notOk(await s.webhooks.hasDelivery(list[2]!.seq, a.id));
    t.notOk(await s.webhooks.hasDelivery(list[0]!.seq, gone.id), 'nothing for the deleted endpoint');
    const log = await s.webhooks.listAttempts(a.id, 10);
    t.same(
      log.map((x) => [x.event_id, x.status, x.delivery_state, x.kind]),
      [
        [list[1]!.id, 500, 'pending', 'event'],
        [list[0]!.id, 200, 'succeeded', 'event'],
      ],
    );
    t.same(
      (await s.webhooks.listAttempts(a.id, 10, log[0]!.cursor)).map((x) => x.event_id),
      [list[0]!.id],
      'paged',
    );
    t.match(log[0], { attempt: 1, at: new Date(100).toISOString(), duration_ms: 12, response: 'ok' });
    // Fanned out again after a restart: the row there is settled, not doubled; the cursor never goes back.
    await s.webhooks.recordAttempts({
      batch: [settled(b.id, list[0]!, 'succeeded')],
      pending: [],
      cursor: list[0]!.pos,
      now: 200,
    });
    t.same(await s.webhooks.fanOutCursor(), list[1]!.pos);
    t.same(
      (await s.webhooks.listAttempts(b.id, 10)).map((x) => x.delivery_state),
      ['succeeded'],
    );
    // A 410 disables the endpoint.
    await s.webhooks.recordAttempts({
      batch: [{ ...settled(a.id, list[2]!, 'failed'), disableEndpoint: true }],
      pending: [],
      cursor: null,
      now: 300,
    });
    t.match(await s.webhooks.getEndpoint(a.id), { enabled: false, disabledReason: '410 Gone' });
  },
);

contract(
  "claims: due pending rows only, within each endpoint's room, never twice; unlocked ones come back",
  async (t, s) => {
    const { who, list } = await events(s, 6);
    const a = await s.webhooks.createEndpoint({
      customerId: who.customerId,
      url: 'https://a.example/',
      events: null,
      description: '',
      secret: 's',
      now: 0,
    });
    const b = await s.webhooks.createEndpoint({
      customerId: who.customerId,
      url: 'https://b.example/',
      events: null,
      description: '',
      secret: 's',
      now: 0,
    });
    await s.webhooks.recordAttempts({
      batch: [],
      pending: list.map((e) => ({ endpointId: a.id, eventSeq: e.seq })),
      cursor: null,
      now: 50,
    });
    await s.webhooks.recordAttempts({
      batch: [],
      pending: list.slice(0, 2).map((e) => ({ endpointId: b.id, eventSeq: e.seq })),
      cursor: null,
      now: 60,
    });
    t.notOk(await s.webhooks.hasDue([a.id, b.id], 49), 'not yet due');
    t.ok(await s.webhooks.hasDue([a.id], 50));
    const taken: string[] = [];
    const room: ClaimRoom = {
      room: (id) => (id === a.id ? 4 : 1) - taken.filter((x) => x === id).length,
      take: (id) => void taken.push(id),
    };
    const first = (await s.webhooks.claim('w1', 100, room, [], true))!;
    t.equal(first.filter((d) => d.endpointId === a.id).length, 4, "a's room");
    t.equal(first.filter((d) => d.endpointId === b.id).length, 1, "b's room");
    t.same(taken.length, 5, 'each counted');
    t.match(
      first.find((d) => d.endpointId === a.id),
      { kind: 'stored', attempts: 0, eventSeq: list[0]!.seq, event: { id: list[0]!.id, type: 'inbound.limited' } },
    );
    const second = (await s.webhooks.claim('w2', 100, unlimited, [], true))!;
    t.same(
      second.map((d) => d.eventSeq).sort(),
      [list[4]!.seq, list[5]!.seq, list[1]!.seq].sort(),
      'the rest, never a claimed one',
    );
    t.same(await s.webhooks.claim('w3', 100, unlimited, [], true), []);
    await s.webhooks.unlock(second.map((d) => d.id));
    t.equal(
      (await s.webhooks.claim('w3', 100, unlimited, [first[0]!.id], true))!.length,
      4,
      'unlocked and released: claimed again',
    );
    t.equal(await s.webhooks.releaseAllClaims(), 8, 'at start, every claim');
  },
);

contract(
  'a replay has its own delivery row, held by the replay, logged and settled at once; a test event logs without a row',
  async (t, s) => {
    const { who, list } = await events(s, 1);
    const a = await s.webhooks.createEndpoint({
      customerId: who.customerId,
      url: 'https://a.example/',
      events: null,
      description: '',
      secret: 's',
      now: 0,
    });
    t.match(await s.webhooks.eventById(list[0]!.id, who.customerId), {
      seq: list[0]!.seq,
      id: list[0]!.id,
      type: 'inbound.limited',
      body: list[0]!.body,
    });
    t.equal(await s.webhooks.eventById(list[0]!.id, who.customerId + 1), undefined);
    const id = await s.webhooks.startReplay(a.id, list[0]!.seq, 500);
    t.notOk(await s.webhooks.hasDue([a.id], 10_000), 'a replay is never claimed by the dispatcher');
    await s.webhooks.finishReplay({ ...attempt(a.id, list[0]!.id, 1, 500, 200), deliveryId: id }, id, 'succeeded', 510);
    await s.webhooks.logAttempt(attempt(a.id, 'msg_test', 1, 600, 204));
    t.same(
      (await s.webhooks.listAttempts(a.id, 10)).map((x) => [x.event_id, x.status, x.delivery_state, x.kind]),
      [
        ['msg_test', 204, null, 'test'],
        [list[0]!.id, 200, 'succeeded', 'replay'],
      ],
    );
    t.notOk(await s.webhooks.hasDelivery(list[0]!.seq, a.id), 'a replay is not the event delivery');
  },
);

contract("a message's webhook deliveries, by event and endpoint", async (t, s) => {
  const who = await sender(s);
  const m = await send(s, who, { now: 1000 });
  const claimed = await s.delivery.claim('w', 1000, 10);
  await s.delivery.record({
    results: claimed.map((c) => ({
      ...c,
      outcome: {
        kind: 'delivered',
        reply: { code: 250, enhanced_code: '2.0.0', message: 'ok', classification: 'delivered' },
        mx: 'mx',
        tls: false,
        tlsVerified: false,
      },
    })),
    composed: new Map(),
    postpone: [],
    policy: { retrySchedule: [60_000], maxQueueTime: 3_600_000 },
    now: 2000,
  });
  const a = await s.webhooks.createEndpoint({
    customerId: who.customerId,
    url: 'https://a.example/',
    events: null,
    description: '',
    secret: 's',
    now: 0,
  });
  const [e] = await readEvents(s, 1);
  const b = await s.webhooks.createEndpoint({
    customerId: who.customerId,
    url: 'https://b.example/',
    events: null,
    description: '',
    secret: 's',
    now: 0,
  });
  await s.webhooks.recordAttempts({
    batch: [settled(a.id, e!, 'succeeded'), settled(b.id, e!, 'pending')],
    pending: [],
    cursor: e!.pos,
    now: 2100,
  });
  const view = (await s.messages.get(who.customerId, m.messageId))!;
  const common = { event_id: e!.id, type: 'email.delivered', attempts: 1, updated_at: 2100, last_error: null };
  t.same(
    (await s.messages.deliveriesOf(view.email_id)).sort((x, y) =>
      x.endpoint_id === a.id ? -1 : y.endpoint_id === a.id ? 1 : 0,
    ),
    [
      { ...common, endpoint_id: a.id, state: 'succeeded', next_attempt_at: null, last_status: 200 },
      { ...common, endpoint_id: b.id, state: 'pending', next_attempt_at: 5000, last_status: 500 },
    ],
    "each with its last attempt's answer and, while pending, when the next is due",
  );
  t.same(
    (await s.messages.events(view.email_id)).map((x) => x.id),
    [e!.id],
  );
});
