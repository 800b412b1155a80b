import { Resolver } from 'node:dns/promises';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import t from 'tap';
import { zoneStrings } from '../../support/dns-server.js';
import { waitFor } from '../../support/wait.js';
import { makeKey } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// A platform onboarding a customer through the API alone (docs/api.md): from one key with every
// scope, over HTTP only, it adds the customer's sending domain, publishes the records the API
// says to publish (into the test's loopback DNS server), has the domain verified, makes a
// send-only key restricted to that domain and a webhook endpoint (a real https receiver checking
// signatures with standardwebhooks), then sends with the send-only key: the message reaches the
// loopback MX with a DKIM signature mailauth verifies against the published record, and
// email.delivered arrives signed. The send-only key is refused (403 insufficient_scope) on every
// route it lacks the scope for.

const rx = await new WebhookReceiver().start();
t.teardown(() => rx.stop());
const env = await startMailEnv({
  mxDomains: ['customer-mail.test'],
  domains: [],
  daemon: { manualDelivery: false },
  toml: `[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
});
const { dns, mx, url } = env;
// The one thing not done over HTTP: the operator gives the platform its key.
const platformKey = await makeKey(env.store, 'production', 'acme');
const api = (path: string, init: { method?: string; body?: unknown; key?: string } = {}) =>
  request(`${url}/api/v1${path}`, { key: platformKey, ...init });

/** A record as the API gives it, put into the loopback DNS server as its owner would publish it. */
function publish(r: { type: string; name: string; value: string }): void {
  if (r.type === 'TXT') dns.set(r.name, { TXT: [zoneStrings(r.value)] });
  else if (r.type === 'CNAME') dns.set(r.name, { CNAME: r.value.replace(/\.$/, '') });
  else if (r.type === 'MX') {
    const [preference, exchange] = r.value.split(/\s+/);
    dns.set(r.name, { MX: [{ preference: Number(preference), exchange: exchange!.replace(/\.$/, '') }] });
  } else throw new Error(`a record the test cannot publish: ${JSON.stringify(r)}`);
}

let sendKey = '';
let sendKeyId = '';
let webhookId = '';

t.test('from one full key to a first delivered message, through the API alone', async (t) => {
  const added = await api('/domains', { body: { name: 'acme.example' } });
  t.equal(added.status, 201, 'the domain added');
  const records: Json[] = added.body.dns_records;
  t.ok(
    ['verification', 'dkim'].every((p) => records.some((r) => r.purpose === p)),
    'the records to publish name the verification and DKIM records',
  );
  const shown = await api('/domains/acme.example');
  t.same(shown.body.dns_records, records, 'read back, the same records');
  for (const r of records) publish(r);

  const verified = await api('/domains/acme.example/verify', { method: 'POST' });
  t.equal(verified.status, 200);
  t.match(verified.body, { name: 'acme.example', verified: true, dns_error: null }, 'verified from what was published');
  t.equal(verified.body.return_path.holds, true, 'the return-path CNAME found');

  const key = await api('/keys', { body: { name: 'acme app', scopes: ['send'], from_domains: ['acme.example'] } });
  t.equal(key.status, 201, 'a send-only key');
  t.match(key.body, { scopes: ['send'], from_domains: ['acme.example'] });
  sendKey = key.body.key;
  sendKeyId = key.body.id;

  const hook = await api('/webhooks', { body: { url: rx.url('/acme'), events: ['email.delivered'] } });
  t.equal(hook.status, 201, 'a webhook endpoint');
  webhookId = hook.body.id;
  rx.secrets.set('/acme', hook.body.secret);

  const sent = await api('/emails', {
    key: sendKey,
    body: { from: 'Acme <hello@acme.example>', to: 'first@customer-mail.test', subject: 'Welcome', text_body: 'Hi' },
  });
  t.equal(sent.status, 202, 'sent with the send-only key');
  const refused = await api('/emails', {
    key: sendKey,
    body: { from: 'hello@other.example', to: 'first@customer-mail.test', subject: 's', text_body: 'b' },
  });
  expectError(t, refused, 403, 'forbidden', 'a From outside the key’s domain');

  const got = await waitFor('the message at the MX', () =>
    mx.received.find((m) => m.to.includes('first@customer-mail.test')),
  );
  const resolver = new Resolver();
  resolver.setServers([dns.server]);
  const dkim = await dkimVerify(got.data, {
    resolver: async (name: string, type: string) => (type === 'TXT' ? resolver.resolveTxt(name) : []),
  });
  const acme = dkim.results.find((r: Json) => r.signingDomain === 'acme.example');
  t.equal(acme?.status?.result, 'pass', 'DKIM signed by acme.example, verified by mailauth against the published key');
  t.match(got.from, /@bounces\.acme\.example$/, 'its envelope sender at the domain’s own return path');

  const delivered = await waitFor('email.delivered at the receiver', () =>
    rx.on('/acme').find((r) => r.type === 'email.delivered'),
  );
  t.ok(delivered.verified, 'signed: standardwebhooks verifies it with the endpoint’s secret');
  t.match(JSON.parse(delivered.body).data, { recipient: 'first@customer-mail.test', message_id: sent.body.message_id });
});

t.test('the send-only key is refused on every route it lacks the scope for', async (t) => {
  const fill: Record<string, string> = {
    name: 'acme.example',
    message_id: 'msg_none',
    event_id: 'evt_none',
    address: 'nobody%40customer-mail.test',
  };
  const routes = env.daemon.apiRoutes.filter((r) => r.access !== 'public' && r.access !== 'send');
  t.ok(routes.length >= 20, `${routes.length} routes need a scope other than send`);
  for (const route of routes) {
    // The real resources where a route names one: the scope is judged before them all the same.
    const ids: Record<string, string> = { ...fill, id: route.url.startsWith('/api/v1/keys') ? sendKeyId : webhookId };
    const path = route.url.replace(/:(\w+)/g, (_m, p: string) => ids[p] ?? `no_such_${p}`);
    const withBody = ['POST', 'PATCH', 'PUT'].includes(route.method);
    const r = await request(`${url}${path}`, { method: route.method, key: sendKey, ...(withBody ? { body: {} } : {}) });
    const what = `${route.method} ${route.url}`;
    expectError(t, r, 403, 'insufficient_scope', what);
    t.match(r.body.error.details.scope?.[0], route.access, `${what}: details.scope names ${route.access}`);
  }
  // Nothing was changed by them: the domain, the key and the endpoint are all still there.
  t.equal((await api('/domains/acme.example')).body.verified, true);
  t.equal((await api(`/webhooks/${webhookId}`)).status, 200);
  t.equal((await api('/keys')).body.data.find((k: Json) => k.id === sendKeyId)?.revoked_at, null);
});
