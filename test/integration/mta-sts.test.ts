import https from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { mxMatches } from '../../src/outbound/routing/mta-sts.js';
import { TestMx } from '../../support/mx-server.js';
import { sendAndDeliver } from '../helpers/api.js';
import { fixture, fixturePath } from '../helpers/fixtures.js';
import { startMailEnv } from '../helpers/mail-env.js';

const tls = { key: fixture('tls/server-key.pem'), cert: fixture('tls/server.pem') };
let policyText = 'version: STSv1\nmode: enforce\nmx: mx.sts.test\nmax_age: 86400\n';
let fetches = 0;
const web = https.createServer(tls, (req, res) => {
  fetches++;
  if (req.url !== '/.well-known/mta-sts.txt') return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'text/plain' }).end(policyText);
});
await new Promise<void>((resolve) => web.listen(0, '127.0.0.6', () => resolve()));
const webPort = (web.address() as AddressInfo).port;
t.teardown(() => new Promise((r) => web.close(r)));

const s = await startMailEnv({
  outbound: `mta_sts_port = ${webPort}\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\nconnect_timeout = "2s"\n`,
});
const { dns, key } = s;
// Two MXes on one port: the environment's, 127.0.0.1 with smtp-server's self-signed certificate,
// and 127.0.0.7 with a certificate for mx.sts.test from the test CA.
const selfSigned = s.mx;
const valid = await new TestMx('127.0.0.7', tls).start(selfSigned.port);
t.teardown(() => valid.stop());

dns.set('sts.test', { MX: [{ preference: 10, exchange: 'mx.sts.test' }] });
dns.set('mx.sts.test', { A: ['127.0.0.7'] });
dns.set('_mta-sts.sts.test', { TXT: ['v=STSv1; id=20261121'] });
dns.set('mta-sts.sts.test', { A: ['127.0.0.6'] });
// Enforced, but its MX presents a self-signed certificate.
dns.set('stsbad.test', { MX: [{ preference: 10, exchange: 'mx.stsbad.test' }] });
dns.set('mx.stsbad.test', { A: ['127.0.0.1'] });
dns.set('_mta-sts.stsbad.test', { TXT: ['v=STSv1; id=1'] });
dns.set('mta-sts.stsbad.test', { A: ['127.0.0.6'] });
// No policy: opportunistic TLS, a self-signed certificate is fine.
dns.set('plain.test', { MX: [{ preference: 10, exchange: 'mx.plain.test' }] });
dns.set('mx.plain.test', { A: ['127.0.0.1'] });

const deliver = (to: string) => sendAndDeliver(s, key, to);

t.test('enforce: delivered to the policy MX over TLS with a valid certificate', async (t) => {
  const m = await deliver('a@sts.test');
  t.equal(m.recipients[0].state, 'delivered');
  t.match(m.events[0].data, { mx: 'mx.sts.test', tls: true, tls_verified: true });
  t.equal(valid.received.length, 1);
  t.ok(fetches >= 1, 'the policy was fetched over https');
});

t.test('enforce: an MX with an invalid certificate is not delivered to (deferred, tls_failure)', async (t) => {
  // mx.stsbad.test is in this policy too: the certificate, not the name, is what fails.
  policyText = 'version: STSv1\nmode: enforce\nmx: mx.sts.test\nmx: mx.stsbad.test\nmax_age: 86400\n';
  const before = selfSigned.received.length;
  const m = await deliver('b@stsbad.test');
  t.equal(m.recipients[0].state, 'deferred');
  t.equal(m.events[0].data.response.classification, 'tls_failure');
  t.equal(selfSigned.received.length, before, 'nothing was sent in the clear or over the bad certificate');
});

t.test('enforce: an MX the policy does not name is not even connected to', async (t) => {
  dns.set('_mta-sts.sts.test', { TXT: ['v=STSv1; id=20261122'] }); // a new id: the policy is fetched again
  policyText = 'version: STSv1\nmode: enforce\nmx: *.elsewhere.test\nmax_age: 86400\n';
  const conns = valid.connections;
  const m = await deliver('c@sts.test');
  t.equal(m.recipients[0].state, 'deferred');
  t.match(m.events[0].data.response, { classification: 'tls_failure', message: /MTA-STS/ });
  t.equal(valid.connections, conns);
});

t.test('no policy: opportunistic TLS delivers despite a self-signed certificate', async (t) => {
  const m = await deliver('d@plain.test');
  t.equal(m.recipients[0].state, 'delivered');
  t.equal(m.events[0].data.tls, true);
  t.equal(m.events[0].data.tls_verified, false, 'encrypted, not verified');
});

t.test('policy mx patterns: a wildcard covers exactly one label', async (t) => {
  t.ok(mxMatches(['mx.example.com'], 'MX.example.com.'));
  t.ok(mxMatches(['*.example.com'], 'mx1.example.com'));
  t.notOk(mxMatches(['*.example.com'], 'a.b.example.com'));
  t.notOk(mxMatches(['*.example.com'], 'example.com'));
  t.notOk(mxMatches(['mx.example.com'], 'mx.example.com.evil.test'));
});
