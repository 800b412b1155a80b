// A send's steps before its commit, the one rule behind the API and SMTP submission
// (send/admit.ts): whose the sender domain is and whether it is verified decide the refusal,
// and an admitted send carries a Message-ID at its domain.

import t from 'tap';
import { fullGrant } from '../../../src/domain/key-scopes.js';
import { NO_QUOTAS } from '../../../src/domain/quotas.js';
import { acceptInputOf, admitSend, isRefused } from '../../../src/send/admit.js';
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
const auth = {
  sendingDomain: async (_customer: number, name: string) => domains.get(name),
  pause: async (customer: number) =>
    paused.has(customer)
      ? { ...okStanding(customer), state: 'paused' as const, paused_at: 1, reason: 'by hand' }
      : undefined,
};

t.test('the sender domain decides', async (t) => {
  t.same(await admitSend(auth, key, 'nowhere.example', 0, NO_QUOTAS), { kind: 'domain_unknown' });
  // Another customer's domain is refused as if unknown: the refusal never says whose it is.
  t.same(await admitSend(auth, key, 'theirs.example', 0, NO_QUOTAS), { kind: 'domain_unknown' });
  t.same(await admitSend(auth, key, 'pending.example', 0, NO_QUOTAS), { kind: 'domain_unverified' });
  const ok = await admitSend(auth, key, 'ours.example', Date.UTC(2026, 10, 28), NO_QUOTAS);
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
  t.same(await admitSend(auth, key, 'ours.example', 0, NO_QUOTAS), { kind: 'customer_paused', reason: 'by hand' });
  t.notOk(isRefused(await admitSend(auth, { ...key, kind: 'sandbox' }, 'ours.example', 0, NO_QUOTAS)));
});
