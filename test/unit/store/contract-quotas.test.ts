import { contract, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines: send quotas judged and counted in the send path's commit
// (domain/quotas.ts), and suppressions by whole domain and in bulk.

const MIN = Date.UTC(2026, 10, 28, 12, 0, 0);

contract(
  'a send quota: counted in recipients, a send refused whole when it does not fit, sandbox apart',
  async (t, s) => {
    const who = await sender(s);
    t.same(await s.customers.quotas(who.customerId), { perMinute: null, perDay: null, perMonth: null });
    t.ok(await s.customers.setQuotas(who.customerId, { perMinute: 3 }));
    t.notOk(await s.customers.setQuotas(9999, { perMinute: 3 }), 'no such customer');
    const at = MIN + 10_500;
    const ok = await send(s, who, { to: ['a@x.example', 'b@x.example'], now: at });
    t.equal(ok.result.kind, 'accepted');
    const over = await send(s, who, { to: ['c@x.example', 'd@x.example'], now: at });
    t.match(over.result, {
      kind: 'rate_limited',
      quota: { quotas: [{ quota: 'per_minute', limit: 3, used: 2 }], count: 2, retryAfter: 50 },
    });
    t.equal(await s.messages.get(who.customerId, over.messageId), undefined, 'nothing stored');
    t.equal((await send(s, who, { to: ['c@x.example'], now: at })).result.kind, 'accepted', 'one still fits');
    t.equal((await send(s, who, { to: ['e@x.example'], now: at, sandbox: true })).result.kind, 'accepted');
    t.same(await s.customers.quotaUse(who.customerId, at), { live: [3, 3, 3], sandbox: [1, 1, 1] });
    // The server's default, given with the send, applies when the customer has none of its own.
    await s.customers.setQuotas(who.customerId, { perMinute: null });
    const next = MIN + 60_000;
    const withDefault = async (n: number) =>
      s.messages.accept({
        ...(await acceptInput(s, who, [`n${n}@x.example`], next)),
        quotas: [0, 4, 0],
      });
    t.equal((await withDefault(1)).kind, 'accepted');
    t.match(await withDefault(2), {
      kind: 'rate_limited',
      quota: { quotas: [{ quota: 'per_day', limit: 4, used: 4 }] },
    });
  },
);

contract('a suppression by whole domain refuses every address at it, not its subdomains', async (t, s) => {
  const who = await sender(s);
  t.same(
    await s.suppressions.addMany(
      who.customerId,
      [
        { address: '@blocked.example', reason: 'manual' },
        { address: 'one@other.example', reason: 'hard_bounce' },
        { address: '@blocked.example', reason: 'manual' },
      ],
      5,
    ),
    [true, true, false],
    'each entry added once',
  );
  t.same(
    [
      ...(await s.suppressions.find(who.customerId, [
        'Anyone@Blocked.example',
        'x@sub.blocked.example',
        'one@other.example',
      ])),
    ],
    [
      ['anyone@blocked.example', 'manual'],
      ['one@other.example', 'hard_bounce'],
    ],
  );
  const r = await send(s, who, { to: ['ok@fine.example', 'Who@blocked.example'] });
  t.match(r.result, { kind: 'suppressed', addresses: [{ address: 'Who@blocked.example', reason: 'manual' }] });
  const alone = await send(s, who, { to: ['who@blocked.example'] });
  t.equal(alone.result.kind, 'suppressed', 'a single recipient too');
  t.equal((await send(s, who, { to: ['x@sub.blocked.example'] })).result.kind, 'accepted');
  const page1 = await s.suppressions.page(who.customerId, undefined, 1);
  t.same(
    page1.map((x) => x.address),
    ['@blocked.example'],
  );
  t.same(
    (await s.suppressions.page(who.customerId, page1[0]!.address, 10)).map((x) => x.address),
    ['one@other.example'],
  );
});

async function acceptInput(
  s: Parameters<typeof send>[0],
  who: { customerId: number; keyId: string },
  to: string[],
  now: number,
) {
  return {
    customerId: who.customerId,
    apiKeyId: who.keyId,
    sandbox: false,
    messageId: `q${now}.${to[0]}`,
    fromHeader: 'shop@example.com',
    senderDomain: 'example.com',
    subject: 's',
    metadata: {},
    request: '{}',
    recipients: to.map((address) => ({ address, domain: address.split('@')[1]!, field: 'to' as const })),
    now,
    authEpoch: await s.keys.authEpoch(),
  };
}

contract("retention drops the quotas' past minutes and days, never the current ones nor the months", async (t, s) => {
  const who = await sender(s);
  await send(s, who, { to: ['a@x.example'], now: MIN });
  await s.admin.purgeOld(MIN + 30_000, 30);
  t.same((await s.customers.quotaUse(who.customerId, MIN)).live, [1, 1, 1], 'the current windows kept');
  await s.admin.purgeOld(MIN + 3 * 86_400_000, 30);
  t.same((await s.customers.quotaUse(who.customerId, MIN)).live, [0, 0, 1], 'past minute and day gone, the month kept');
});
