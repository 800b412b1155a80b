import { createHash } from 'node:crypto';
import { contract, rawRun, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines: the send path's commit (the message and its recipients,
// suppressions, idempotency, the auth epoch re-check, batches) and the reads of messages.

const hash = (s: string) => createHash('sha256').update(s).digest();

contract(
  'a message is stored with its recipients, tags and schedule, and reads back as the API shows it',
  async (t, s) => {
    const who = await sender(s);
    const { messageId, result } = await send(s, who, {
      to: ['bob@example.net', 'carol@example.org'],
      tags: ['welcome'],
      now: 2_000_000,
    });
    t.match(result, { kind: 'accepted', emailId: Number });
    const m = await s.messages.get(who.customerId, messageId);
    t.match(m, {
      message_id: messageId,
      from: 'Shop <shop@example.com>',
      subject: 'Your order',
      sandbox: false,
      metadata: { order: '1' },
      size: null,
      created_at: new Date(2_000_000).toISOString(),
      scheduled_at: null,
      tags: ['welcome'],
      events: [],
    });
    t.same(
      m!.recipients.map((r) => [r.address, r.field, r.state, r.attempts, r.next_attempt_at]),
      [
        ['bob@example.net', 'to', 'queued', 0, new Date(2_000_000).toISOString()],
        ['carol@example.org', 'to', 'queued', 0, new Date(2_000_000).toISOString()],
      ],
    );
    t.equal(await s.messages.get(who.customerId + 99, messageId), undefined, "another customer's message is not found");
    t.ok(await s.messages.get(undefined, messageId), 'any customer (the CLI)');
    const later = await send(s, who, { scheduledAt: 9_000_000, now: 2_000_001 });
    t.match(await s.messages.get(who.customerId, later.messageId), {
      scheduled_at: new Date(9_000_000).toISOString(),
      recipients: [{ next_attempt_at: new Date(9_000_000).toISOString() }],
    });
    t.equal(
      (await s.delivery.claim('w', 8_999_999, 10)).filter((c) => c.message.messageId === later.messageId).length,
      0,
      'held until its time',
    );
  },
);

contract(
  'a message submitted over SMTP is stored as MIME: its format and size kept, claimed with its bytes, shown as it was written',
  async (t, s) => {
    const who = await sender(s);
    const mime = Buffer.from('From: Shop <shop@example.com>\r\nTo: bob@example.net\r\nSubject: Hi\r\n\r\nHello\r\n');
    const r = await s.messages.accept({
      customerId: who.customerId,
      apiKeyId: who.keyId,
      sandbox: false,
      messageId: 'smtp1@example.com',
      fromHeader: 'Shop <shop@example.com>',
      senderDomain: 'example.com',
      subject: 'Hi',
      metadata: {},
      request: mime,
      requestFormat: 'mime',
      recipients: [{ address: 'bob@example.net', domain: 'example.net', field: 'to' }],
      now: 2_000_000,
      authEpoch: await s.keys.authEpoch(),
    });
    t.match(r, { kind: 'accepted' });
    t.match(
      await s.messages.get(who.customerId, 'smtp1@example.com'),
      { size: mime.length, from: 'Shop <shop@example.com>', subject: 'Hi' },
      'its size is known at acceptance',
    );
    t.same(await s.messages.content(who.customerId, 'smtp1@example.com'), {
      request: mime,
      format: 'mime',
      composed: null,
    });
    const api = await send(s, who, { now: 2_000_001 });
    t.match(
      await s.messages.content(who.customerId, api.messageId),
      { format: 'json', composed: null },
      'a send request is json',
    );
    const claimed = await s.delivery.claim('w', 2_000_002, 10);
    const byId = new Map(claimed.map((c) => [c.message.messageId, c.message]));
    t.match(byId.get('smtp1@example.com'), { requestFormat: 'mime', raw: null });
    t.same(byId.get('smtp1@example.com')!.request, mime, 'claimed with the bytes as stored');
    t.equal(byId.get(api.messageId)!.requestFormat, 'json');
  },
);

contract('a suppressed recipient refuses the whole message, naming it, and stores nothing', async (t, s) => {
  const who = await sender(s);
  await s.suppressions.add({ customerId: who.customerId, address: 'carol@example.org', reason: 'hard_bounce', now: 1 });
  const { messageId, result } = await send(s, who, { to: ['bob@example.net', 'Carol@Example.org'] });
  t.same(result, {
    kind: 'suppressed',
    addresses: [{ address: 'Carol@Example.org', field: 'to', reason: 'hard_bounce' }],
    authEpoch: await s.keys.authEpoch(),
  });
  t.equal(await s.messages.get(who.customerId, messageId), undefined);
});

contract(
  'an Idempotency-Key answers its first response while fresh, conflict for another body, and is forgotten when stale',
  async (t, s) => {
    const who = await sender(s);
    const idem = { key: 'k1', hash: hash('body'), ttlMs: 1000 };
    const first = await send(s, who, { idempotency: idem, now: 10_000 });
    t.equal(first.result.kind, 'accepted');
    const again = await send(s, who, { idempotency: idem, now: 10_500 });
    t.match(again.result, {
      kind: 'replay',
      status: 202,
      response: { message_id: first.messageId, status: 'queued', sandbox: false, recipients: ['bob@example.net'] },
    });
    t.equal(await s.messages.get(who.customerId, again.messageId), undefined, 'no second message');
    t.match((await send(s, who, { idempotency: { ...idem, hash: hash('other') }, now: 10_600 })).result, {
      kind: 'conflict',
    });
    t.match((await send(s, who, { idempotency: idem, now: 11_001 })).result, { kind: 'accepted' }, 'stale: a new send');
  },
);

contract('when the auth epoch moved, the key and the domain are checked again inside the commit', async (t, s) => {
  const who = await sender(s);
  const stale = await s.keys.authEpoch();
  const accept = (over: Partial<Parameters<typeof s.messages.accept>[0]> = {}) =>
    s.messages.accept({
      customerId: who.customerId,
      apiKeyId: who.keyId,
      sandbox: false,
      messageId: `x${Math.random()}@example.com`,
      fromHeader: 'shop@example.com',
      senderDomain: 'example.com',
      subject: 's',
      metadata: {},
      request: '{}',
      recipients: [{ address: 'bob@example.net', domain: 'example.net', field: 'to' }],
      now: 1,
      authEpoch: stale,
      ...over,
    });
  t.match(await accept(), { kind: 'accepted', authEpoch: stale }, 'unchanged: accepted without a check');
  const c = await s.customers.add('other', 1);
  await s.domains.add({ customerId: c.id, name: 'theirs.example', receiving: false, now: 1 });
  const moved = await s.keys.authEpoch();
  t.not(moved, stale);
  t.match(
    await accept({ senderDomain: 'theirs.example' }),
    { kind: 'domain_unknown', authEpoch: moved },
    "another customer's domain",
  );
  await s.domains.add({ customerId: who.customerId, name: 'new.example', receiving: false, now: 1 });
  t.match(await accept({ senderDomain: 'new.example' }), { kind: 'domain_unverified' });
  t.match(await accept(), { kind: 'accepted' }, 'still live and verified');
  await s.keys.revoke(who.keyId, 2);
  t.match(await accept(), { kind: 'key_revoked' });
});

contract(
  'a batch stores what it can in one commit, each item with its result, under one Idempotency-Key',
  async (t, s) => {
    const who = await sender(s);
    await s.suppressions.add({ customerId: who.customerId, address: 'no@example.net', reason: 'manual', now: 1 });
    const item = (to: string, n: number) => ({
      customerId: who.customerId,
      apiKeyId: who.keyId,
      sandbox: false,
      messageId: `b${n}.${Math.random()}@example.com`,
      fromHeader: 'shop@example.com',
      senderDomain: 'example.com',
      subject: 's',
      metadata: {},
      request: '{}',
      recipients: [{ address: to, domain: to.split('@')[1]!, field: 'to' as const }],
      now: 5,
    });
    const items = [
      item('a@example.net', 1),
      { error: { code: 'validation_failed', message: 'bad', details: { to: ['bad'] } } },
      item('no@example.net', 2),
    ];
    const input = {
      items,
      customerId: who.customerId,
      apiKeyId: who.keyId,
      idempotency: { key: 'batch', hash: hash('b'), ttlMs: 60_000 },
      authEpoch: await s.keys.authEpoch(),
      now: 5,
    };
    const r = await s.messages.acceptBatch(input);
    t.equal(r.kind, 'accepted');
    const data = r.kind === 'accepted' ? r.response.data : [];
    t.match(data[0], { message_id: items[0] && 'messageId' in items[0] ? items[0].messageId : '', status: 'queued' });
    t.match(data[1], { error: { code: 'validation_failed' } });
    t.same(
      data[2],
      {
        refused: {
          kind: 'suppressed',
          addresses: [{ address: 'no@example.net', field: 'to', reason: 'manual' }],
        },
        domain: 'example.com',
      },
      'a refusal is kept as a value, for the API to say',
    );
    t.match(await s.messages.acceptBatch(input), {
      kind: 'replay',
      status: 202,
      response: { data: [{ status: 'queued' }, { error: {} }, { refused: { kind: 'suppressed' } }] },
    });
    await s.keys.revoke(who.keyId, 6);
    t.match(await s.messages.acceptBatch({ ...input, idempotency: undefined, authEpoch: '0' }), {
      kind: 'key_revoked',
    });
  },
);

contract("a batch's answer kept in the earlier form, each item its body, is replayed as it was kept", async (t, s) => {
  const who = await sender(s);
  const kept = {
    data: [
      { message_id: 'old.1@example.com', status: 'queued', sandbox: false, recipients: ['a@example.net'] },
      {
        error: {
          code: 'recipient_suppressed',
          message: '1 recipient(s) are on the suppression list; nothing was queued.',
          details: { to: ['no@example.net is on the suppression list (manual)'] },
        },
      },
    ],
  };
  await rawRun(
    s,
    'INSERT INTO idempotency_keys (customer_id, key, request_hash, status, response, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    [who.customerId, 'old', hash('old batch'), 202, JSON.stringify(kept), 1000],
  );
  const r = await s.messages.acceptBatch({
    items: [],
    customerId: who.customerId,
    apiKeyId: who.keyId,
    idempotency: { key: 'old', hash: hash('old batch'), ttlMs: 60_000 },
    authEpoch: await s.keys.authEpoch(),
    now: 2000,
  });
  t.same(r, { kind: 'replay', status: 202, response: kept, authEpoch: await s.keys.authEpoch() });
});

contract(
  'messages are listed newest first, searched by recipient, Message-ID, tag, state and time, and canceled while untouched',
  async (t, s) => {
    const who = await sender(s);
    const a = await send(s, who, { to: ['bob@example.net'], tags: ['t1'], now: 100_000 });
    const b = await send(s, who, { to: ['carol@example.net'], now: 200_000 });
    const c = await send(s, who, { to: ['Bob@example.net'], tags: ['t1'], now: 300_000, scheduledAt: 10_000_000 });
    const ids = async (q: Partial<Parameters<typeof s.messages.search>[0]>) =>
      (await s.messages.search({ customerId: who.customerId, limit: 10, ...q })).map((m) => m.message_id);
    t.same(await ids({}), [c.messageId, b.messageId, a.messageId]);
    t.same(await ids({ recipient: 'Bob@example.net' }), [c.messageId, a.messageId], 'as sent or in lower case');
    t.same(await ids({ messageId: `<${b.messageId}>` }), [b.messageId]);
    t.same(await ids({ tag: 't1' }), [c.messageId, a.messageId]);
    t.same(await ids({ since: 150_000, until: 250_000 }), [b.messageId]);
    t.same(await ids({ limit: 1 }), [c.messageId]);
    const first = (await s.messages.search({ customerId: who.customerId, limit: 1 }))[0]!;
    t.same(await ids({ before: first.email_id }), [b.messageId, a.messageId], 'paged by email_id');
    t.match(first, {
      customer: 'default',
      from: 'Shop <shop@example.com>',
      subject: 'Your order',
      sandbox: false,
      states: { queued: 1 },
    });
    t.same(
      (await s.messages.list({ limit: 10, customerId: who.customerId })).map((m) => m.message_id),
      [c.messageId, b.messageId, a.messageId],
    );
    // b is claimed (in flight); a is delivered below; c is untouched.
    const claimed = await s.delivery.claim('w', 250_000, 10);
    t.same(claimed.map((x) => x.message.messageId).sort(), [a.messageId, b.messageId].sort());
    const ofA = claimed.find((x) => x.message.messageId === a.messageId)!;
    await s.delivery.record({
      results: [
        {
          ...ofA,
          outcome: {
            kind: 'delivered',
            reply: { code: 250, enhanced_code: '2.0.0', message: 'ok', classification: 'delivered' },
            mx: 'mx',
            tls: false,
            tlsVerified: false,
          },
        },
      ],
      composed: new Map(),
      postpone: [],
      policy: { retrySchedule: [60_000], maxQueueTime: 86_400_000 },
      now: 260_000,
    });
    // Canceling is the queue's delete of what waits (QueueStore.cancel): b, in flight, is canceled
    // (its attempt finishes first); a, delivered, is too late; another customer's is not found.
    const row = async (id: string) => (await s.messages.get(who.customerId, id))!.email_id;
    t.same(await s.queue.cancel(await row(a.messageId), who.customerId, 1), {
      kind: 'too_late',
      states: { delivered: 1 },
    });
    t.same(await s.queue.cancel(await row(b.messageId), who.customerId, 1), {
      kind: 'canceled',
      changed: 1,
      in_flight: 1,
    });
    t.same(await s.queue.cancel(await row(c.messageId), who.customerId + 9, 1), { kind: 'not_found' });
    t.same(await s.queue.cancel(await row(c.messageId), undefined, 1), { kind: 'canceled', changed: 1, in_flight: 0 });
    t.same(await s.queue.cancel(await row(c.messageId), who.customerId, 1), {
      kind: 'too_late',
      states: { canceled: 1 },
    });
    t.same(await ids({ state: 'canceled' }), [c.messageId, b.messageId]);
    t.same(await ids({ state: 'delivered' }), [a.messageId]);
    t.same(await ids({ state: 'queued' }), []);
    t.same(
      (await s.messages.list({ limit: 10, state: 'canceled' })).map((m) => m.message_id),
      [c.messageId, b.messageId],
    );
  },
);

contract(
  "a message is found by the Message-ID its sender wrote too, within its customer's messages, and every event carries that id",
  async (t, s) => {
    const who = await sender(s);
    const own = await send(s, who, { headerMessageId: '1732.42.django@app.example.com', now: 100_000 });
    const twice = await send(s, who, { headerMessageId: '1732.42.django@app.example.com', now: 200_000 });
    const plain = await send(s, who, { now: 300_000 });
    await send(s, who, {
      now: 400_000,
      messageId: 'same@example.com',
      headerMessageId: 'same@example.com',
    });
    const ids = async (messageId: string, customerId = who.customerId) =>
      (await s.messages.search({ customerId, limit: 10, messageId })).map((m) => m.message_id);
    t.same(await ids('1732.42.django@app.example.com'), [twice.messageId, own.messageId], 'by the header id: both');
    t.same(await ids('<1732.42.django@app.example.com>'), [twice.messageId, own.messageId], 'with angle brackets');
    t.same(await ids(own.messageId), [own.messageId], "posthaste's id still finds it");
    t.same(await ids(' <same@example.com> '), ['same@example.com'], 'one message when both ids are the same');
    t.same(await ids('1732.42.django@app.example.com', who.customerId + 1), [], "another customer's search finds none");
    t.same(await ids('django@app.example.com'), [], 'the whole id, not a part');
    const listed = await s.messages.search({ customerId: who.customerId, limit: 10 });
    t.same(
      listed.map((m) => [m.message_id, m.header_message_id]),
      [
        ['same@example.com', 'same@example.com'],
        [plain.messageId, plain.messageId],
        [twice.messageId, '1732.42.django@app.example.com'],
        [own.messageId, '1732.42.django@app.example.com'],
      ],
      'summaries name the header id: the sender’s, else posthaste’s',
    );
    t.equal((await s.messages.get(who.customerId, own.messageId))!.header_message_id, '1732.42.django@app.example.com');
    t.equal((await s.messages.get(who.customerId, plain.messageId))!.header_message_id, plain.messageId);
    // Events: a delivery of `own` and a hard bounce of `plain` (email.bounced and recipient.suppressed).
    const claimed = await s.delivery.claim('w', 500_000, 10);
    const reply = (code: number, classification: string) => ({
      code,
      enhanced_code: code === 250 ? '2.0.0' : '5.1.1',
      message: 'm',
      classification,
    });
    await s.delivery.record({
      results: claimed
        .filter((x) => x.message.messageId === own.messageId || x.message.messageId === plain.messageId)
        .map((x) => ({
          ...x,
          outcome:
            x.message.messageId === own.messageId
              ? { kind: 'delivered' as const, reply: reply(250, 'delivered'), mx: 'mx', tls: false, tlsVerified: false }
              : {
                  kind: 'bounced' as const,
                  bounceType: 'hard' as const,
                  reply: reply(550, 'unknown_recipient'),
                  suppress: true,
                },
        })),
      composed: new Map(),
      postpone: [],
      policy: { retrySchedule: [60_000], maxQueueTime: 86_400_000 },
      now: 510_000,
    });
    const eventsOf = async (id: string) => (await s.messages.get(who.customerId, id))!.events;
    t.same(
      (await eventsOf(own.messageId)).map((e) => [e.type, e.data.header_message_id]),
      [['email.delivered', '1732.42.django@app.example.com']],
    );
    const bounced = await eventsOf(plain.messageId);
    t.ok(bounced.length >= 1);
    for (const e of bounced) t.equal(e.data.header_message_id, plain.messageId, `${e.type}: posthaste's id`);
  },
);
