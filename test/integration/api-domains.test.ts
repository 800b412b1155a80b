// A customer's domains through the API (docs/api.md, "Domains"): added with the records the CLI
// gives (the return-path CNAME included), verified against a real DNS server on loopback, its DKIM
// key rotated, removed; another customer's domain is a 409 that does not say whose. The periodic
// re-check (domain-setup/manage.ts recheckDomains, which the daemon runs every
// dns.recheck_interval) unverifies a domain only on a definite answer, never on SERVFAIL, and
// sends domain.verified / domain.verification_failed to the customer's webhooks.

import t from 'tap';
import { recheckDomains } from '../../src/domain-setup/manage.js';
import { createResolver } from '../../src/lib/dns.js';
import { zoneStrings } from '../../support/dns-server.js';
import { waitFor } from '../../support/wait.js';
import { sendEmail } from '../helpers/api.js';
import { makeKey } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const rx = await new WebhookReceiver().start();
t.teardown(() => rx.stop());
const webhooksToml = `[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`;
const s = await startMailEnv({ mxDomains: ['rcpt.test'], domains: [], toml: webhooksToml });
const { dns, key } = s;
const other = await makeKey(s.store, 'production', 'rival');
const api = (path: string, init: { method?: string; body?: unknown; key?: string } = {}) =>
  request(`${s.url}/api/v1${path}`, { key, ...init });
const recheck = () => recheckDomains(s.store.domains, createResolver([dns.server]), s.config, () => Date.now());

/** Publishes a domain's records as its owner would: the TXT records, and the return-path CNAME. */
function publish(records: Json[]): void {
  for (const r of records)
    if (r.type === 'TXT' && ['verification', 'dkim', 'dmarc'].includes(r.purpose))
      dns.set(r.name, { TXT: [zoneStrings(r.value)] });
    else if (r.purpose === 'return_path') dns.set(r.name, { CNAME: r.value });
}

const hook = await api('/webhooks', {
  body: { url: rx.url('/domains'), events: ['domain.verified', 'domain.verification_failed'] },
});
rx.secrets.set('/domains', hook.body.secret);
// Drained until they arrive: on PostgreSQL the fan-out reads an event only once every transaction
// older than it has ended (docs/cluster.md), so one drain right after the commit may not see it.
const domainEvents = (n: number): Promise<Json[]> =>
  waitFor(`${n} domain events`, async () => {
    await s.daemon.dispatcher.drain();
    return rx.on('/domains').length >= n && rx.on('/domains');
  });

t.test('add, show, verify, rotate and remove a domain; the records are the CLI’s', async (t) => {
  const added = await api('/domains', { body: { name: 'Acme.Example.' } });
  t.equal(added.status, 201);
  t.match(added.body, { name: 'acme.example', verified: false, verified_at: null, receiving: false });
  t.match(added.body.return_path, {
    host: 'bounces.acme.example',
    holds: false,
    envelope_domain: 'bounces.test.posthaste',
  });
  const rp = added.body.dns_records.find((r: Json) => r.purpose === 'return_path');
  t.match(rp, { type: 'CNAME', name: 'bounces.acme.example', value: 'bounces.test.posthaste.' });
  t.same(
    added.body.dns_records.map((r: Json) => r.purpose).filter((p: string) => ['verification', 'dkim'].includes(p)),
    ['verification', 'dkim'],
  );
  t.same(
    (await api('/domains')).body.data.map((d: Json) => d.name),
    ['acme.example'],
  );
  t.same((await api('/domains/acme.example')).body.dns_records, added.body.dns_records, 'GET shows the same records');

  const early = await api('/domains/acme.example/verify', { method: 'POST' });
  t.equal(early.status, 200);
  t.match(early.body, { verified: false, dns_error: null });
  t.ok(early.body.checks.some((c: Json) => c.purpose === 'dkim' && !c.found && c.lookup === 'no_domain'));
  expectError(
    t,
    await request(`${s.url}/api/v1/emails`, {
      key,
      body: { from: 'a@acme.example', to: 'b@rcpt.test', subject: 's', text_body: 'b' },
    }),
    403,
    'domain_not_verified',
  );

  publish(added.body.dns_records);
  const ok = await api('/domains/acme.example/verify', { method: 'POST' });
  t.match(ok.body, {
    verified: true,
    verified_at: /^20/,
    dns_error: null,
    return_path: { holds: true, envelope_domain: 'bounces.acme.example' },
  });
  t.ok(
    ok.body.checks
      .filter((c: Json) => ['verification', 'dkim', 'return_path'].includes(c.purpose))
      .every((c: Json) => c.found),
  );
  const events = await domainEvents(1);
  t.match(JSON.parse(events[0]!.body), {
    type: 'domain.verified',
    data: { domain: 'acme.example', verified_at: ok.body.verified_at, records: [{ found: true }, { found: true }] },
  });
  t.ok(events[0]!.verified, 'signed as every event');
  await api('/domains/acme.example/verify', { method: 'POST' });
  await s.daemon.dispatcher.drain();
  t.equal(rx.on('/domains').length, 1, 'verified again: no second event');
  t.match(
    await sendEmail(s.url, key, { from: 'a@acme.example', to: 'b@rcpt.test', subject: 's', text_body: 'b' }),
    /./,
  );

  const rotated = await api('/domains/acme.example/rotate-dkim', { method: 'POST' });
  t.match(rotated.body, { name: 'acme.example', selector: /^posthaste/, signing: 'posthaste', grace_days: 7 });
  t.match(rotated.body.record, { purpose: 'dkim_next', type: 'TXT' });
  t.ok((await api('/domains/acme.example')).body.dns_records.some((r: Json) => r.purpose === 'dkim_next'));

  expectError(t, await api('/domains', { body: { name: 'not a domain', colour: 'red' } }), 422, 'validation_failed');
  expectError(t, await api('/domains', { body: {} }), 422, 'validation_failed');
});

t.test("another customer's domain: a 409 that does not say whose, and invisible otherwise", async (t) => {
  const taken = await api('/domains', { key: other, body: { name: 'acme.example' } });
  expectError(t, taken, 409, 'conflict');
  t.notMatch(JSON.stringify(taken.body), /default|own|your/i, 'the owner is not named');
  expectError(t, await api('/domains', { body: { name: 'acme.example' } }), 409, 'conflict', 'its own, again');
  for (const [method, path] of [
    ['GET', '/domains/acme.example'],
    ['DELETE', '/domains/acme.example'],
    ['POST', '/domains/acme.example/verify'],
    ['POST', '/domains/acme.example/rotate-dkim'],
  ] as const)
    expectError(t, await api(path, { key: other, method }), 404, 'not_found', `${method} ${path}`);
  t.same((await api('/domains', { key: other })).body.data, []);
  t.ok(await s.store.domains.find('acme.example'), 'still there');

  const race = await Promise.all(
    [key, other, key, other, key].map((k) => api('/domains', { key: k, body: { name: 'race.example' } })),
  );
  t.same(
    race.map((r) => r.status).sort(),
    [201, 409, 409, 409, 409],
    'added at once by several: one 201, the rest 409 (never a 500)',
  );
  const winner = race.find((r) => r.status === 201)!;
  t.equal(
    (await api('/domains/race.example', { method: 'DELETE', key: race.indexOf(winner) % 2 ? other : key })).status,
    200,
  );
});

t.test('the re-check: SERVFAIL changes nothing, a removed record unverifies and is told', async (t) => {
  const d = (await api('/domains/acme.example')).body;
  const txt = d.dns_records.find((r: Json) => r.purpose === 'verification').name;
  const dkim = d.dns_records.find((r: Json) => r.purpose === 'dkim').name;

  dns.failures.set(txt, 'SERVFAIL');
  dns.failures.set(dkim, 'SERVFAIL');
  dns.failures.set('bounces.acme.example', 'SERVFAIL');
  const failing = await recheck();
  t.same(failing.unanswered, ['acme.example']);
  t.same(failing.unverified, []);
  t.match(
    (await api('/domains/acme.example')).body,
    { verified: true, return_path: { holds: true } },
    'nothing unverified',
  );
  dns.failures.clear();

  dns.zone.delete('bounces.acme.example');
  const noCname = await recheck();
  t.same(noCname.returnPathChanged, ['acme.example']);
  t.match(
    (await api('/domains/acme.example')).body,
    { verified: true, return_path: { holds: false, envelope_domain: 'bounces.test.posthaste' } },
    "the CNAME removed: mail goes back to the server's return path",
  );

  dns.zone.delete(dkim);
  const gone = await recheck();
  t.same(gone.unverified, ['acme.example']);
  t.match((await api('/domains/acme.example')).body, { verified: false, verified_at: null });
  const events = await domainEvents(2);
  t.match(JSON.parse(events[1]!.body), {
    type: 'domain.verification_failed',
    data: {
      domain: 'acme.example',
      verified_at: null,
      records: [
        { purpose: 'verification', found: true },
        { purpose: 'dkim', found: false },
      ],
    },
  });
  expectError(
    t,
    await request(`${s.url}/api/v1/emails`, {
      key,
      body: { from: 'a@acme.example', to: 'b@rcpt.test', subject: 's', text_body: 'b' },
    }),
    403,
    'domain_not_verified',
  );
  t.equal((await recheck()).checked, 0, 'an unverified domain is not re-checked');
});

t.test('a return-path host of another label than smtp.return_path_label is not used', async (t) => {
  const d = (await s.store.domains.find('acme.example'))!;
  await s.store.domains.setVerified(d.id, Date.now());
  await s.store.domains.setReturnPath(d.id, 'oldlabel.acme.example');
  t.match((await api('/domains/acme.example')).body.return_path, {
    host: 'bounces.acme.example',
    holds: false,
    envelope_domain: 'bounces.test.posthaste',
  });
  await sendEmail(s.url, key, { from: 'a@acme.example', to: 'label@rcpt.test', subject: 's', text_body: 'b' });
  await s.daemon.scheduler.drain();
  const got = s.mx.received.find((m) => m.to[0] === 'label@rcpt.test');
  t.match(got?.from, /@bounces\.test\.posthaste$/, "the envelope sender is on the server's return path");
});

t.test('DELETE removes the domain', async (t) => {
  const r = await api('/domains/acme.example', { method: 'DELETE' });
  t.same(r.body, { name: 'acme.example', deleted: true });
  expectError(t, await api('/domains/acme.example'), 404, 'not_found');
});
