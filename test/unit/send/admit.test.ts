// A send's steps before its commit, the one rule behind the API and SMTP submission
// (send/admit.ts): whose the sender domain is and whether it is verified decide the refusal, a
// chosen pool must be configured and the customer's to choose, and an admitted send carries a
// Message-ID at its domain.

import t from 'tap';
import { fullGrant } from '../../../src/domain/key-scopes.js';
import { NO_QUOTAS } from '../../../src/domain/quotas.js';
import { acceptInputOf, admitSend, isRefused, type SendAsk, type SendRules } from '../../../src/send/admit.js';
import type { ApiKeyInfo, SendingDomain } from '../../../src/store/model.js';
import { okStanding } from '../../../src/store/reputation-store.js';

const key: ApiKeyInfo = {
  id: 'k1',
  customer_id: 7,
  name: 'app',
  kind: 'production',
  created_at: 0,
  revoked_at: null,
  ...fullGrant(),
};
const domains = new Map<string, SendingDomain>([
  ['ours.example', { id: 1, customer_id: 7, name: 'ours.example', verified_at: 1 }],
  ['pending.example', { id: 2, customer_id: 7, name: 'pending.example', verified_at: null }],
  ['theirs.example', { id: 3, customer_id: 8, name: 'theirs.example', verified_at: 1 }],
]);
const paused = new Set<number>();
/** Customer 7 may choose "bulk" (allowed) and "transactional" (its default). */
const choices = new Map<number, string[]>([[7, ['bulk', 'transactional']]]);
const auth = {
  mayChoosePool: async (customer: number, pool: string) => {
    const list = choices.get(customer) ?? [];
    return { allowed: list.includes(pool), choices: list };
  },
  sendingDomain: async (_customer: number, name: string) => domains.get(name),
  pause: async (customer: number) =>
    paused.has(customer)
      ? { ...okStanding(customer), state: 'paused' as const, paused_at: 1, reason: 'by hand' }
      : undefined,
};

const rules: SendRules = {
  quotas: NO_QUOTAS,
  pools: new Set(['transactional', 'bulk', 'other']),
  unsubscribeOffered: false,
};
const ask = (fromDomain: string, more: Partial<SendAsk> = {}): SendAsk => ({
  key,
  fromDomain,
  unsubscribe: false,
  now: 0,
  ...more,
});

t.test('the sender domain decides', async (t) => {
  t.same(await admitSend(auth, rules, ask('nowhere.example')), { kind: 'domain_unknown' });
  // Another customer's domain is refused as if unknown: the refusal never says whose it is.
  t.same(await admitSend(auth, rules, ask('theirs.example')), { kind: 'domain_unknown' });
  t.same(await admitSend(auth, rules, ask('pending.example')), { kind: 'domain_unverified' });
  const ok = await admitSend(auth, rules, ask('ours.example', { now: Date.UTC(2026, 10, 28) }));
  t.notOk(isRefused(ok));
  if (isRefused(ok)) return;
  t.match(ok.messageId, /^[0-9a-z]+@ours\.example$/);
  const input = acceptInputOf(
    { ...key, kind: 'sandbox' },
    ok,
    { fromHeader: 'a@ours.example', subject: 's', metadata: {}, request: '{}', recipients: [] },
    5,
  );
  t.match(input, { customerId: 7, apiKeyId: 'k1', sandbox: true, senderDomain: 'ours.example', now: 5 });
  t.equal(input.messageId, ok.messageId);
});

t.test('a paused customer: refused with the reason, its sandbox key still admitted', async (t) => {
  paused.add(7);
  t.teardown(() => paused.delete(7));
  t.same(await admitSend(auth, rules, ask('ours.example')), { kind: 'customer_paused', reason: 'by hand' });
  t.notOk(isRefused(await admitSend(auth, rules, ask('ours.example', { key: { ...key, kind: 'sandbox' } }))));
});

t.test("a chosen pool: configured and the customer's to choose, else refused naming the choices", async (t) => {
  const bulk = await admitSend(auth, rules, ask('ours.example', { pool: 'bulk' }));
  t.notOk(isRefused(bulk), 'an allowed pool');
  if (isRefused(bulk)) return;
  t.equal(bulk.pool, 'bulk');
  const input = acceptInputOf(
    key,
    bulk,
    { fromHeader: 'a@ours.example', subject: 's', metadata: {}, request: '{}', recipients: [] },
    5,
  );
  t.equal(input.pool, 'bulk', 'the accept input carries the admitted pool');
  t.notOk(isRefused(await admitSend(auth, rules, ask('ours.example', { pool: 'transactional' }))), 'its default pool');
  const none = await admitSend(auth, rules, ask('ours.example'));
  t.ok(!isRefused(none) && none.pool === undefined, 'no pool chosen: none carried');
  t.same(await admitSend(auth, rules, ask('ours.example', { pool: 'other' })), {
    kind: 'pool_not_allowed',
    pool: 'other',
    configured: true,
    allowed: ['bulk', 'transactional'],
  });
  t.same(await admitSend(auth, rules, ask('ours.example', { pool: 'nowhere' })), {
    kind: 'pool_not_allowed',
    pool: 'nowhere',
    configured: false,
    allowed: ['bulk', 'transactional'],
  });
  // Another customer with no pools of its own may choose none.
  t.same(await admitSend(auth, rules, ask('ours.example', { key: { ...key, customer_id: 9 }, pool: 'bulk' })), {
    kind: 'pool_not_allowed',
    pool: 'bulk',
    configured: true,
    allowed: [],
  });
});
