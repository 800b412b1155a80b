import type { Store } from '../../../src/store/store.js';
import { contract, readEvents } from '../../helpers/stores.js';

// The store's contract on both engines for what the management API changes: a domain's verified
// state with its event in one transaction (only when the state changes), and a webhook endpoint
// updated and its secret rotated.

const records = (found: boolean) => [
  { purpose: 'verification', name: '_posthaste.example.com', found: true },
  { purpose: 'dkim', name: 'posthaste._domainkey.example.com', found },
];

async function domain(s: Store) {
  const c = (await s.customers.find('default'))!;
  return { c, d: await s.domains.add({ customerId: c.id, name: 'example.com', receiving: false, now: 100 }) };
}

contract(
  'a verification writes domain.verified or domain.verification_failed only when the state changes',
  async (t, s) => {
    const { c, d } = await domain(s);
    t.equal(
      await s.domains.setVerification(d.id, { verified: false, now: 150, records: records(false) }),
      null,
      'a domain never verified that is not found: no event',
    );
    t.equal(
      await s.domains.setVerification(d.id, { verified: true, now: 200, records: records(true) }),
      'domain.verified',
    );
    t.equal((await s.domains.find('example.com'))!.verified_at, 200);
    t.equal(
      await s.domains.setVerification(d.id, { verified: true, now: 300, records: records(true) }),
      null,
      'verified again: nothing changes, no event',
    );
    t.equal((await s.domains.find('example.com'))!.verified_at, 200, 'the first verification time is kept');
    t.equal(
      await s.domains.setVerification(d.id, { verified: false, now: 400, records: records(false) }),
      'domain.verification_failed',
    );
    t.equal((await s.domains.find('example.com'))!.verified_at, null);
    const events = await readEvents(s, 2);
    t.same(
      events.map((e) => [e.type, e.customerId, JSON.parse(e.body).data]),
      [
        [
          'domain.verified',
          c.id,
          { domain: 'example.com', verified_at: new Date(200).toISOString(), records: records(true) },
        ],
        ['domain.verification_failed', c.id, { domain: 'example.com', verified_at: null, records: records(false) }],
      ],
    );
    t.equal(await s.domains.setVerification(9999, { verified: true, now: 1, records: [] }), null, 'no such domain');
  },
);

contract('an endpoint updated field by field, disabled and enabled, its secret rotated', async (t, s) => {
  const c = (await s.customers.find('default'))!;
  const e = await s.webhooks.createEndpoint({
    customerId: c.id,
    url: 'https://a.example/hook',
    events: null,
    description: 'first',
    secret: 'whsec_old',
    now: 100,
  });
  t.match(e, { previousSecret: null, previousSecretExpiresAt: null });
  t.match(await s.webhooks.updateEndpoint(e.id, { url: 'https://b.example/hook' }), {
    url: 'https://b.example/hook',
    events: null,
    description: 'first',
    enabled: true,
  });
  t.match(await s.webhooks.updateEndpoint(e.id, { events: ['email.bounced'], description: 'second' }), {
    url: 'https://b.example/hook',
    events: ['email.bounced'],
    description: 'second',
  });
  t.match(await s.webhooks.updateEndpoint(e.id, { enabled: { on: false, reason: 'by hand' } }), {
    enabled: false,
    disabledReason: 'by hand',
  });
  t.match(await s.webhooks.updateEndpoint(e.id, { events: null, enabled: { on: true } }), {
    enabled: true,
    disabledReason: null,
    events: null,
  });
  t.equal(await s.webhooks.updateEndpoint('wh_none', { url: 'https://c.example/' }), undefined);

  const r = await s.webhooks.rotateSecret(e.id, 'whsec_new', 5000);
  t.match(r, { secret: 'whsec_new', previousSecret: 'whsec_old', previousSecretExpiresAt: 5000 });
  t.match(await s.webhooks.getEndpoint(e.id), {
    secret: 'whsec_new',
    previousSecret: 'whsec_old',
    previousSecretExpiresAt: 5000,
  });
  t.match(await s.webhooks.rotateSecret(e.id, 'whsec_third', 9000), {
    secret: 'whsec_third',
    previousSecret: 'whsec_new',
    previousSecretExpiresAt: 9000,
  });
  t.equal(await s.webhooks.rotateSecret('wh_none', 'whsec_x', 1), undefined);
});
