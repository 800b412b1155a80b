import { createHash, X509Certificate } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ManualClock } from '../../src/lib/clock.js';
import { eventsOf, sendAndDeliver } from '../helpers/api.js';
import { fixture, fixturePath } from '../helpers/fixtures.js';
import type { Json } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { ScriptedPeer } from '../helpers/scripted-peer.js';

// The test CA's server certificate (for mx.sts.test, not for the names below) presented with the
// CA behind it, as a server whose TLSA records name its issuer (DANE-TA) does.
const serverPem = fixture('tls/server.pem');
const caPem = fixture('tls/ca.pem');
const server = new X509Certificate(serverPem);
const ca = new X509Certificate(caPem);
const spki = (c: X509Certificate) => c.publicKey.export({ type: 'spki', format: 'der' });
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest();
const daneEe = { usage: 3, selector: 1, matchingType: 1, certificate: sha256(spki(server)) };
const daneTa = { usage: 2, selector: 0, matchingType: 1, certificate: sha256(ca.raw) };
const wrongEe = { usage: 3, selector: 1, matchingType: 1, certificate: sha256(Buffer.from('another key')) };
const pkixEe = { usage: 1, selector: 1, matchingType: 1, certificate: sha256(spki(server)) };

// sts.test also enforces MTA-STS, its policy served over https with the test CA's certificate.
const web = https.createServer({ key: fixture('tls/server-key.pem'), cert: serverPem }, (_req, res) => {
  res
    .writeHead(200, { 'content-type': 'text/plain' })
    .end('version: STSv1\nmode: enforce\nmx: *.sts.test\nmax_age: 86400\n');
});
await new Promise<void>((resolve) => web.listen(0, '127.0.0.10', () => resolve()));
t.teardown(() => new Promise((resolve) => web.close(resolve)));

const clock = new ManualClock(Date.now());
const s = await startMailEnv({
  mx: { host: '127.0.0.8', tls: { key: fixture('tls/server-key.pem'), cert: Buffer.concat([serverPem, caPem]) } },
  outbound: `dane = true\nconnect_timeout = "2s"\nmta_sts_port = ${(web.address() as AddressInfo).port}\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
  daemon: { clock },
});
const { dns, mx, key } = s;
// A server that does not offer STARTTLS at all.
const plain = await new ScriptedPeer({ ehlo: ['PIPELINING'] }).start(mx.port, '127.0.0.9');
t.teardown(() => plain.stop());
const tlsa = (host: string) => `_${mx.port}._tcp.${host}`;

// Signed zones, as a validating resolver on loopback reports them (the AD bit).
dns.signed.add('dane.test');
dns.signed.add('sts.test');
const zone = (domain: string, host: string, address: string, records?: (typeof daneEe)[]) => {
  dns.set(domain, { MX: [{ preference: 10, exchange: host }] });
  dns.set(host, { A: [address] });
  if (records) dns.set(tlsa(host), { TLSA: records });
};
zone('ee.dane.test', 'mx.ee.dane.test', '127.0.0.8', [wrongEe, daneEe]);
zone('wrong.dane.test', 'mx.wrong.dane.test', '127.0.0.8', [wrongEe]);
zone('ta.dane.test', 'mx.sts.test', '127.0.0.8', [daneTa]);
zone('taname.dane.test', 'mx.taname.dane.test', '127.0.0.8', [daneTa]);
zone('unusable.dane.test', 'mx.unusable.dane.test', '127.0.0.8', [pkixEe]);
zone('notls.dane.test', 'mx.notls.dane.test', '127.0.0.9', [daneEe]);
zone('none.dane.test', 'mx.none.dane.test', '127.0.0.9');
zone('servfail.dane.test', 'mx.servfail.dane.test', '127.0.0.8');
dns.failures.set(tlsa('mx.servfail.dane.test'), 'SERVFAIL');
// Records that do not match, in a zone that is not signed: nothing to go by.
zone('unsigned.test', 'mx.unsigned.test', '127.0.0.8', [wrongEe]);
// sts.test's MTA-STS policy, at the https server above.
dns.set('_mta-sts.sts.test', { TXT: ['v=STSv1; id=1'] });
dns.set('mta-sts.sts.test', { A: ['127.0.0.10'] });

const deliver = (to: string) => sendAndDeliver(s, key, to);
const deferral = (m: Json) => eventsOf(m, 'email.deferred')[0]?.data.response;
const received = (rcpt: string) => mx.received.filter((r) => r.to.includes(rcpt));

t.test(
  'DANE-EE: the server key matches a record, whatever names its certificate bears; delivered over TLS',
  async (t) => {
    const m = await deliver('a@ee.dane.test');
    t.equal(m.recipients[0].state, 'delivered');
    t.equal(received('a@ee.dane.test')[0]?.secure, true);
    t.match(eventsOf(m, 'email.delivered')[0]?.data, { tls: true, tls_verified: true });
  },
);

t.test('DANE-EE: no record matches, so deferred as a TLS failure and never sent without TLS', async (t) => {
  const connections = mx.connections;
  const m = await deliver('b@wrong.dane.test');
  t.equal(m.recipients[0].state, 'deferred');
  t.match(deferral(m), {
    code: 451,
    enhanced_code: '4.7.5',
    classification: 'tls_failure',
    message: /matches none of the TLSA records/,
  });
  t.equal(mx.connections, connections + 1, 'one connection, no second try in plaintext');
  t.equal(received('b@wrong.dane.test').length, 0);
});

t.test(
  'DANE-TA: the chain leads to the issuer a record names and the certificate is valid for the MX host',
  async (t) => {
    const m = await deliver('c@ta.dane.test');
    t.equal(m.recipients[0].state, 'delivered');
    t.equal(received('c@ta.dane.test')[0]?.secure, true);
  },
);

t.test('DANE-TA: the issuer matches but the certificate is for another name: deferred', async (t) => {
  const m = await deliver('d@taname.dane.test');
  t.equal(m.recipients[0].state, 'deferred');
  t.match(deferral(m), { classification: 'tls_failure', message: /not valid for mx\.taname\.dane\.test/ });
});

t.test('TLSA records of which none is usable (PKIX-EE): TLS is required but not authenticated', async (t) => {
  const m = await deliver('e@unusable.dane.test');
  t.equal(m.recipients[0].state, 'delivered');
  t.equal(received('e@unusable.dane.test')[0]?.secure, true);
  t.match(eventsOf(m, 'email.delivered')[0]?.data, { tls: true, tls_verified: false });
});

t.test('usable TLSA records and a server without STARTTLS: deferred, not sent in plaintext', async (t) => {
  const m = await deliver('f@notls.dane.test');
  t.equal(m.recipients[0].state, 'deferred');
  t.match(deferral(m), { classification: 'tls_failure', message: /does not offer STARTTLS/ });
  t.equal(plain.messages.length, 0);
});

t.test(
  'a signed zone without TLSA records: delivered as without DANE, in plaintext where there is no STARTTLS',
  async (t) => {
    const m = await deliver('g@none.dane.test');
    t.equal(m.recipients[0].state, 'delivered');
    t.equal(plain.messages.length, 1);
  },
);

t.test('the TLSA lookup fails in a signed zone: the host is not used, and the recipient is deferred', async (t) => {
  const connections = mx.connections;
  const m = await deliver('h@servfail.dane.test');
  t.equal(m.recipients[0].state, 'deferred');
  t.match(deferral(m), {
    code: 451,
    enhanced_code: '4.7.5',
    classification: 'dns_failure',
    message: /mx\.servfail\.dane\.test: TLSA lookup for mx\.servfail\.dane\.test failed \(SERVFAIL\)/,
  });
  t.equal(mx.connections, connections, 'no connection made');
});

t.test(
  'an unsigned zone: its TLSA records are not even looked up, and delivery goes on opportunistically',
  async (t) => {
    const m = await deliver('i@unsigned.test');
    t.equal(m.recipients[0].state, 'delivered');
    t.notOk(
      dns.queries.some((q) => q.type === 'TLSA' && q.name.endsWith('unsigned.test')),
      'no TLSA query for a host whose MX is not signed',
    );
  },
);

t.test('with MTA-STS enforced: DANE decides TLS for a host with records, both ways (RFC 8461 2)', async (t) => {
  // A certificate the policy would take (valid for mx.sts.test under the configured CA), a record
  // that does not match it: not delivered.
  dns.set('sts.test', { MX: [{ preference: 10, exchange: 'mx.sts.test' }] });
  dns.set(tlsa('mx.sts.test'), { TLSA: [wrongEe] });
  clock.advance(3_600_000); // past every cached answer
  let m = await deliver('j@sts.test');
  t.equal(m.recipients[0].state, 'deferred', 'MTA-STS does not make good a failed DANE check');
  t.match(deferral(m), { classification: 'tls_failure', message: /matches none of the TLSA records/ });
  // A host the policy allows whose certificate is not valid for its name, with a record that
  // matches its key: delivered, where MTA-STS alone would have refused the certificate.
  dns.set('sts.test', { MX: [{ preference: 10, exchange: 'mx2.sts.test' }] });
  dns.set('mx2.sts.test', { A: ['127.0.0.8'] });
  dns.set(tlsa('mx2.sts.test'), { TLSA: [daneEe] });
  dns.set(tlsa('mx.sts.test'), { TLSA: [daneTa] });
  clock.advance(3_600_000);
  m = await deliver('k@sts.test');
  t.equal(m.recipients[0].state, 'delivered');
  t.equal(received('k@sts.test')[0]?.secure, true);
});
