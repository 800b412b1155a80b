import net from 'node:net';
import t from 'tap';
import { isPublicAddress } from '../../src/webhooks/address-guard.js';
import { newSecret } from '../../src/webhooks/sign.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { customerId, makeKey, recordTestEvent, startTestServer } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// A canary on loopback: any connection to it means the guard let something through.
let canaryConnections = 0;
const canary = net.createServer((s) => {
  canaryConnections++;
  s.destroy();
});
await new Promise<void>((r) => canary.listen(0, '127.0.0.1', () => r()));
const port = (canary.address() as net.AddressInfo).port;
const dns = await new TestDnsServer().start();
t.teardown(async () => {
  await dns.stop();
  await new Promise((r) => canary.close(r));
});

// A name that answers a public address the first time it is asked, loopback afterwards (rebinding).
dns.dynamic.set('rebind.test', (type, count) =>
  type === 'A' ? { A: [count === 1 ? '93.184.216.34' : '127.0.0.1'] } : {},
);
dns.set('loopback.test', { A: ['127.0.0.1'] });
dns.set('mixed.test', { A: ['93.184.216.34', '10.1.2.3'] });

const s = await startTestServer(
  `[webhooks]\nallow_private_targets = false\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
  { manualDelivery: true, dns: dns.server },
);
t.teardown(() => s.close());
const key = await makeKey(s.store);

const refused = [
  `https://127.0.0.1:${port}/`,
  `https://localhost:${port}/`,
  `https://0x7f000001:${port}/`,
  `https://2130706433:${port}/`,
  `https://0177.0.0.1:${port}/`,
  `https://127.1:${port}/`,
  `https://[::1]:${port}/`,
  `https://[::ffff:127.0.0.1]:${port}/`,
  `https://[::ffff:7f00:1]:${port}/`,
  'https://10.0.0.1/',
  'https://172.16.5.4/',
  'https://192.168.1.1/',
  'https://169.254.169.254/latest/meta-data/',
  'https://100.64.0.1/',
  'https://[fc00::1]/',
  'https://[fe80::1]/',
  'https://0.0.0.0/',
  `https://loopback.test:${port}/`,
  'https://mixed.test/',
  'http://example.com/',
  'ftp://example.com/',
  `https://user:pw@rebind.test:${port}/`,
];

t.test('creating an endpoint refuses every private or local target, naming the url', async (t) => {
  for (const url of refused) {
    const r = await request(`${s.url}/api/v1/webhooks`, { key, body: { url } });
    t.equal(r.status, 422, url);
    t.ok(r.body.error?.details?.url, `${url}: details.url`);
    // Every refusal the setting would lift names it; a scheme or credentials it does not lift do not.
    if (url.startsWith('ftp:') || url.includes('user:pw'))
      t.notMatch(r.body.error.details.url[0], /allow_private_targets/, `${url}: not the setting's`);
    else
      t.match(
        r.body.error.details.url[0],
        /; webhooks\.allow_private_targets = true allows (it|plain http) \(development and tests only\)$/,
        `${url}: names the setting`,
      );
  }
  t.equal(canaryConnections, 0, 'nothing connected while checking');
});

t.test('DNS rebinding: public when created, loopback when sent: refused at connect time', async (t) => {
  const created = await request(`${s.url}/api/v1/webhooks`, { key, body: { url: `https://rebind.test:${port}/hook` } });
  t.equal(created.status, 201, 'the first answer was public');
  await recordTestEvent(s, {
    customerId: await customerId(s.store),
    type: 'email.delivered',
    data: { n: 1 },
    now: Date.now(),
  });
  await s.daemon.dispatcher.drain();
  const log = (await request(`${s.url}/api/v1/webhooks/${created.body.id}/deliveries`, { key })).body.data;
  t.equal(log.length, 1);
  t.match(log[0], {
    status: null,
    error: /refused: .*127\.0\.0\.1.*not a public address; webhooks\.allow_private_targets = true allows it/,
  });
  t.equal(canaryConnections, 0, 'the canary saw no connection');
});

t.test('endpoints already stored with private targets are refused when sending, never connected', async (t) => {
  // As if created while allow_private_targets was true, then the setting was turned off.
  const cid = await customerId(s.store);
  for (const url of refused.slice(0, 9))
    await s.store.webhooks.createEndpoint({
      customerId: cid,
      url,
      events: null,
      description: '',
      secret: newSecret(),
      now: Date.now() - 1000,
    });
  await recordTestEvent(s, { customerId: cid, type: 'email.bounced', data: { n: 2 }, now: Date.now() });
  await s.daemon.dispatcher.drain();
  const errors = (
    await s.sql.all<{ error: string }>("SELECT error FROM webhook_attempts WHERE event_type = 'email.bounced'")
  ).map((r) => r.error);
  t.ok(errors.length >= 9);
  for (const e of errors)
    t.match(
      e,
      /(not a public address|local name|must be https).*webhooks\.allow_private_targets = true allows (it|plain http)/,
    );
  t.equal(canaryConnections, 0);
});

t.test('redirects are not followed (even where private targets are allowed)', async (t) => {
  const rx = await new WebhookReceiver().start();
  t.teardown(() => rx.stop());
  const open = await startTestServer(
    `[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
    { manualDelivery: true, dns: dns.server },
  );
  t.teardown(() => open.close());
  const k = await makeKey(open.store);
  const ep = (await request(`${open.url}/api/v1/webhooks`, { key: k, body: { url: rx.url('/redirect') } })).body;
  rx.script.set('/redirect', [{ redirect: `http://127.0.0.1:${port}/` }]);
  await recordTestEvent(open, {
    customerId: await customerId(open.store),
    type: 'email.delivered',
    data: {},
    now: Date.now(),
  });
  await open.daemon.dispatcher.drain();
  const log = (await request(`${open.url}/api/v1/webhooks/${ep.id}/deliveries`, { key: k })).body.data;
  t.match(log[0], { status: 302 });
  t.equal(log[0].delivery_state, 'pending', 'a 3xx is a failure, retried later');
  t.equal(canaryConnections, 0, 'the redirect target was never contacted');
});

t.test('the address classifier', async (t) => {
  for (const a of ['8.8.8.8', '93.184.216.34', '2001:4860:4860::8888', '::ffff:8.8.8.8']) t.ok(isPublicAddress(a), a);
  for (const a of [
    '127.0.0.1',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '::1',
    '::',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::7f00:1',
    '::127.0.0.1',
    'not-an-ip',
  ])
    t.notOk(isPublicAddress(a), a);
});
