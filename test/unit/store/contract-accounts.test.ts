import { fullGrant } from '../../../src/domain/key-scopes.js';
import { contract, sender } from '../../helpers/stores.js';

// The store's contract, run against both engines (test/helpers/stores.ts): customers, API keys
// and the auth epoch, domains and DKIM rotation, dashboard users and sessions, suppressions.

contract('customers: the default one, added ones by name and id, counts of what they own', async (t, s) => {
  await s.customers.ensureDefault(2);
  const all = await s.customers.list();
  t.same(
    all.map((c) => c.name),
    ['default'],
    'ensureDefault twice makes one',
  );
  const acme = await s.customers.add('acme', 5);
  t.match(acme, { name: 'acme', created_at: 5 });
  t.same(await s.customers.find('acme'), acme);
  t.same(await s.customers.byId(acme.id), acme);
  t.equal(await s.customers.find('nobody'), undefined);
  await s.keys.create({ grant: fullGrant(), customerId: acme.id, kind: 'sandbox', name: 'k', now: 6 });
  await s.domains.add({ customerId: acme.id, name: 'acme.example', receiving: false, now: 6 });
  t.same(await s.customers.counts(acme.id), { keys: 1, domains: 1, messages: 0 });
});

contract(
  'keys: authenticated by the whole key only, refused once revoked or with the wrong prefix; every change moves the auth epoch',
  async (t, s) => {
    const c = (await s.customers.find('default'))!;
    const e0 = await s.keys.authEpoch();
    const live = await s.keys.create({
      grant: fullGrant(),
      customerId: c.id,
      kind: 'production',
      name: 'live',
      now: 10,
    });
    const test = await s.keys.create({ grant: fullGrant(), customerId: c.id, kind: 'sandbox', name: 'test', now: 11 });
    t.match(live.key, /^ph_live_[0-9A-Za-z]{40}$/);
    t.match(test.key, /^ph_test_[0-9A-Za-z]{40}$/);
    const e1 = await s.keys.authEpoch();
    t.not(e1, e0, 'creating a key moves the epoch');
    t.match(await s.keys.authenticate(live.key), {
      id: live.id,
      customer_id: c.id,
      kind: 'production',
      revoked_at: null,
    });
    t.notOk(
      (await s.keys.authenticate(live.key)) && 'hash' in (await s.keys.authenticate(live.key))!,
      'the hash never leaves the store',
    );
    t.equal(await s.keys.authenticate(`${live.key.slice(0, -1)}x`), undefined, 'one character off');
    t.equal(await s.keys.authenticate(live.key.replace('ph_live_', 'ph_test_')), undefined, 'the wrong prefix');
    t.equal(await s.keys.authenticate('garbage'), undefined);
    t.same(
      (await s.keys.list(c.id)).map((k) => k.name),
      ['live', 'test'],
    );
    t.match(await s.keys.get(test.id, c.id), { id: test.id, kind: 'sandbox' });
    t.equal(await s.keys.get(test.id, c.id + 1), undefined, "another customer's");
    t.ok(await s.keys.revoke(live.id, 20));
    t.ok(await s.keys.revoke(live.id, 21), 'revoking twice is fine');
    t.notOk(await s.keys.revoke('key_nosuchkey0', 21));
    t.equal(await s.keys.authenticate(live.key), undefined, 'revoked');
    t.not(await s.keys.authEpoch(), e1, 'revoking moves the epoch');
  },
);

contract(
  'domains: DKIM key made, verified, receiving, inbound limits, rotated and switched; each change moves the epoch',
  async (t, s) => {
    const c = (await s.customers.find('default'))!;
    const d = await s.domains.add({ customerId: c.id, name: 'example.com', receiving: true, now: 100 });
    t.match(d, {
      name: 'example.com',
      customer_id: c.id,
      receiving: 1,
      verified_at: null,
      dkim_selector: 'posthaste',
      created_at: 100,
    });
    t.match(d.dkim_private_key, /BEGIN PRIVATE KEY/);
    t.same(await s.domains.findSending('example.com'), {
      id: d.id,
      customer_id: c.id,
      name: 'example.com',
      verified_at: null,
    });
    const e = await s.keys.authEpoch();
    await s.domains.setVerified(d.id, 200);
    t.not(await s.keys.authEpoch(), e);
    t.match(await s.domains.find('example.com'), { verified_at: 200 });
    t.equal(d.return_path_host, null, 'a new domain has no return path of its own');
    await s.domains.setReturnPath(d.id, 'bounces.example.com');
    t.match(await s.domains.find('example.com'), { return_path_host: 'bounces.example.com' });
    t.match((await s.domains.list(c.id))[0], { return_path_host: 'bounces.example.com' });
    await s.domains.setReturnPath(d.id, null);
    t.equal((await s.domains.find('example.com'))?.return_path_host, null, 'cleared when it no longer holds');
    t.same(await s.domains.receiving('example.com'), {
      id: d.id,
      customerId: c.id,
      name: 'example.com',
      ratePerMinute: null,
      monthlyLimit: null,
    });
    await s.domains.setInboundLimits(d.id, { ratePerMinute: 5 });
    t.same(await s.domains.inboundLimits(d.id), { ratePerMinute: 5, monthlyLimit: null });
    await s.domains.setInboundLimits(d.id, { monthlyLimit: 9, ratePerMinute: null });
    t.same(await s.domains.inboundLimits(d.id), { ratePerMinute: null, monthlyLimit: 9 });
    await s.domains.setReceiving(d.id, false);
    t.equal(await s.domains.receiving('example.com'), undefined, 'not receiving');
    const day = Date.UTC(2026, 10, 26);
    const rotated = await s.domains.rotateDkim(d.id, day);
    t.equal(rotated.next_dkim_selector, 'posthaste20261126');
    t.equal(rotated.dkim_selector, 'posthaste', 'still signing with the old key');
    await s.domains.switchDkim(d.id, day + 1);
    t.match(await s.domains.find('example.com'), {
      dkim_selector: 'posthaste20261126',
      previous_dkim_selector: 'posthaste',
      next_dkim_selector: null,
      dkim_public_key: rotated.next_dkim_public_key,
      dkim_switched_at: day + 1,
    });
    t.equal(
      (await s.domains.rotateDkim(d.id, day)).next_dkim_selector,
      'posthaste20261126a',
      'a selector taken gets a letter',
    );
    await s.domains.add({ customerId: c.id, name: 'b.example', receiving: false, now: 100 });
    t.same(
      (await s.domains.list(c.id)).map((x) => x.name),
      ['b.example', 'example.com'],
    );
    await s.domains.remove(d.id);
    t.equal(await s.domains.find('example.com'), undefined);
  },
);

contract(
  'suppressions: case-insensitive, listed newest first and by reason, searched by prefix, removed',
  async (t, s) => {
    const { customerId } = await sender(s);
    t.ok(await s.suppressions.add({ customerId, address: 'Bob@Example.net', reason: 'hard_bounce', now: 10 }));
    t.notOk(
      await s.suppressions.add({ customerId, address: 'bob@example.net', reason: 'manual', now: 11 }),
      'already there',
    );
    await s.suppressions.add({ customerId, address: 'carol@example.net', reason: 'manual', now: 12 });
    await s.suppressions.add({ customerId, address: 'dave@other.example', reason: 'spam_complaint', now: 13 });
    const found = await s.suppressions.find(customerId, ['BOB@example.net', 'eve@example.net', 'carol@EXAMPLE.net']);
    t.same([...found].sort(), [
      ['bob@example.net', 'hard_bounce'],
      ['carol@example.net', 'manual'],
    ]);
    t.same((await s.suppressions.find(customerId, [])).size, 0);
    t.same(
      (await s.suppressions.list(customerId, { limit: 10 })).map((r) => r.address),
      ['dave@other.example', 'carol@example.net', 'bob@example.net'],
    );
    t.same(
      (await s.suppressions.list(customerId, { limit: 10, before: 13 })).map((r) => r.address),
      ['carol@example.net', 'bob@example.net'],
      'paged by time',
    );
    t.same(
      (await s.suppressions.list(customerId, { limit: 10, reason: 'manual' })).map((r) => r.address),
      ['carol@example.net'],
    );
    t.same(
      (await s.suppressions.search(customerId, 'C', 10)).map((r) => r.address),
      ['carol@example.net'],
    );
    t.same(
      (await s.suppressions.search(customerId, '', 2)).map((r) => r.address),
      ['bob@example.net', 'carol@example.net'],
      'address order, limited',
    );
    t.ok(await s.suppressions.remove(customerId, 'CAROL@example.net'));
    t.notOk(await s.suppressions.remove(customerId, 'carol@example.net'));
    t.same((await s.suppressions.list(customerId + 1, { limit: 10 })).length, 0, "another customer's list is apart");
  },
);

contract('users and sessions: one per email, sessions expire when idle, a new password ends them', async (t, s) => {
  const c = (await s.customers.find('default'))!;
  const admin = await s.users.add({
    email: 'Admin@Example.com',
    passwordHash: 'h1',
    role: 'admin',
    customerId: null,
    now: 1,
  });
  t.match(admin, { email: 'admin@example.com', role: 'admin', customer_id: null });
  await s.users.add({ email: 'user@example.com', passwordHash: 'h2', role: 'customer', customerId: c.id, now: 2 });
  t.match(await s.users.find('ADMIN@example.com'), { id: admin.id, password_hash: 'h1' });
  t.same(
    (await s.users.list()).map((u) => [u.email, u.customer]),
    [
      ['admin@example.com', null],
      ['user@example.com', 'default'],
    ],
  );
  const session = await s.users.createSession(admin, c.id, 1000);
  t.match(await s.users.useSession(session.id, 2000, 60_000), {
    user: { id: admin.id },
    csrf: session.csrf,
    customerId: c.id,
  });
  const other = await s.customers.add('other', 3);
  await s.users.showCustomer(session.id, other.id);
  t.match(await s.users.useSession(session.id, 3000, 60_000), { customerId: other.id });
  t.equal(await s.users.useSession('nosuchsession', 3000, 60_000), undefined);
  t.equal(await s.users.useSession(session.id, 200_000, 60_000), undefined, 'idle too long');
  t.equal(await s.users.useSession(session.id, 3000, 60_000), undefined, 'and gone');
  const again = await s.users.createSession(admin, c.id, 10_000);
  t.ok(await s.users.setPassword('admin@example.com', 'h3'));
  t.equal(await s.users.useSession(again.id, 10_001, 60_000), undefined, 'a new password ends the sessions');
  t.notOk(await s.users.setPassword('nobody@example.com', 'h'));
  const third = await s.users.createSession(admin, c.id, 10_000);
  await s.users.endSession(third.id);
  t.equal(await s.users.useSession(third.id, 10_001, 60_000), undefined);
  await s.users.createSession(admin, c.id, 10_000);
  t.equal(await s.users.purgeSessions(100_000, 60_000), 1);
  t.ok(await s.users.remove('user@example.com'));
  t.notOk(await s.users.remove('user@example.com'));
});

contract('keys: scopes and restrictions kept with the key and read with it by every lookup', async (t, s) => {
  const c = (await s.customers.find('default'))!;
  const grant = { scopes: ['send' as const, 'emails:read' as const], from_domains: ['a.example'], allowed_cidrs: null };
  const k = await s.keys.create({ grant, customerId: c.id, kind: 'production', name: 'narrow', now: 10 });
  t.match(k, { ...grant, last_used_at: null });
  const full = await s.keys.create({ grant: fullGrant(), customerId: c.id, kind: 'production', name: 'full', now: 11 });
  const cidrs = { scopes: ['keys:write' as const], from_domains: null, allowed_cidrs: ['10.0.0.0/8', '2001:db8::/32'] };
  const r = await s.keys.create({ grant: cidrs, customerId: c.id, kind: 'sandbox', name: 'cidrs', now: 12 });
  t.same((await s.keys.authenticate(k.key))!.scopes, ['send', 'emails:read']);
  t.match(await s.keys.authenticate(k.key), grant, 'authenticate reads the grant (the send path caches it)');
  t.match(await s.keys.authenticate(full.key), fullGrant());
  t.match(await s.keys.authenticate(r.key), cidrs);
  t.match(await s.keys.get(k.id, c.id), grant, 'get');
  const listed = await s.keys.list(c.id);
  t.match(
    listed.map(({ scopes, from_domains, allowed_cidrs }) => ({ scopes, from_domains, allowed_cidrs })),
    [grant, fullGrant(), cidrs],
    'list',
  );
});
