// DANE through a real validating resolver: Unbound on loopback, holding a zone signed with
// ldns-signzone and a trust anchor for it, answers with the AD bit only for what DNSSEC proves.
// The same zone served with one TLSA record altered after signing must not deliver at all.

import { execFileSync, spawn } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { querySecure } from '../../src/lib/dns-secure.js';
import { TestMx } from '../../support/mx-server.js';
import { freePort } from '../../support/postfix.js';
import { eventsOf, sendAndDeliver } from '../helpers/api.js';
import { makeDomain, makeKey, startTestServer, tempDir } from '../helpers/env.js';
import { fixture } from '../helpers/fixtures.js';
import type { Json } from '../helpers/http.js';
import { withPeer } from '../helpers/peers.js';

const UNBOUND = '/usr/sbin/unbound';
const zoneFile = (origin: string, records: string[]) =>
  [
    `$ORIGIN ${origin}.`,
    '$TTL 300',
    `@ IN SOA ns.${origin}. admin.${origin}. 1 3600 600 86400 300`,
    `@ IN NS ns.${origin}.`,
    'ns IN A 127.0.0.1',
    ...records,
    '',
  ].join('\n');
const missing = ['/usr/sbin/unbound', '/usr/bin/ldns-keygen', '/usr/bin/ldns-signzone'].find((p) => !existsSync(p));

await withPeer(missing ? `${missing} is not installed (Debian packages unbound, ldnsutils)` : null, async () => {
  const temp = tempDir();
  t.teardown(() => temp.remove());
  const dir = temp.path;
  const mx = await new TestMx('127.0.0.8', {
    key: fixture('tls/server-key.pem'),
    cert: fixture('tls/server.pem'),
  }).start();
  t.teardown(() => mx.stop());
  const server = new X509Certificate(fixture('tls/server.pem'));
  const match = createHash('sha256')
    .update(server.publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
  const other = createHash('sha256').update('another key').digest('hex');
  const tlsa = (host: string, hex: string) => `_${mx.port}._tcp.${host} IN TLSA 3 1 1 ${hex}`;

  // dane.test, signed: ee (its record matches), wrong (it does not), forged (altered after signing).
  const hosts = ['ee', 'wrong', 'forged'].flatMap((name) => [
    `${name} IN MX 10 mx.${name}`,
    `mx.${name} IN A 127.0.0.8`,
  ]);
  writeFileSync(
    join(dir, 'dane.test.zone'),
    zoneFile('dane.test', [...hosts, tlsa('mx.ee', match), tlsa('mx.wrong', other), tlsa('mx.forged', other)]),
  );
  const keygen = (...args: string[]) =>
    execFileSync('/usr/bin/ldns-keygen', [...args, '-a', 'ECDSAP256SHA256', 'dane.test'], {
      cwd: dir,
      encoding: 'utf8',
    }).trim();
  const zsk = keygen();
  const ksk = keygen('-k');
  execFileSync('/usr/bin/ldns-signzone', ['-n', 'dane.test.zone', zsk, ksk], { cwd: dir });
  // An attacker's record in place of the signed one: the signature no longer covers it.
  const signed = readFileSync(join(dir, 'dane.test.zone.signed'), 'utf8');
  const forged = signed.replace(
    new RegExp(`(_${mx.port}\\._tcp\\.mx\\.forged\\.dane\\.test\\.\\s+\\d+\\s+IN\\s+TLSA\\s+3 1 1 )${other}`),
    `$1${match}`,
  );
  if (forged === signed) throw new Error('the TLSA record of mx.forged was not found in the signed zone');
  writeFileSync(join(dir, 'dane.test.zone.signed'), forged);
  // plain.test, not signed, with a record that matches nothing: DANE does not apply.
  writeFileSync(
    join(dir, 'plain.test.zone'),
    zoneFile('plain.test', ['@ IN MX 10 mx', 'mx IN A 127.0.0.8', tlsa('mx', other)]),
  );

  const port = await freePort();
  const anchor = readdirSync(dir).find((f) => f.startsWith(ksk) && f.endsWith('.ds'))!;
  const authZone = (name: string, file: string) =>
    `auth-zone:\n  name: "${name}"\n  zonefile: "${join(dir, file)}"\n  for-downstream: no\n  for-upstream: yes\n  fallback-enabled: no\n`;
  writeFileSync(
    join(dir, 'unbound.conf'),
    [
      'server:',
      `  interface: 127.0.0.1@${port}`,
      `  port: ${port}`,
      '  do-not-query-localhost: no',
      '  username: ""',
      '  chroot: ""',
      `  directory: "${dir}"`,
      `  pidfile: "${join(dir, 'unbound.pid')}"`,
      '  use-syslog: no',
      '  module-config: "validator iterator"',
      `  trust-anchor-file: "${join(dir, anchor)}"`,
      // test. is one of the names Unbound answers NXDOMAIN for itself (RFC 6761).
      '  local-zone: "test." nodefault',
      // Never a query off the machine: everything it answers comes from the zones below.
      '  do-not-query-address: 0.0.0.0/0',
      '  do-not-query-address: ::/0',
      authZone('dane.test.', 'dane.test.zone.signed'),
      authZone('plain.test.', 'plain.test.zone'),
    ].join('\n'),
  );
  const unbound = spawn(UNBOUND, ['-d', '-c', join(dir, 'unbound.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let said = '';
  unbound.stderr.on('data', (c: Buffer) => (said += c.toString()));
  t.teardown(() => unbound.kill());
  const resolver = `127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const answer = await querySecure([resolver], 'ee.dane.test', 'MX', 500).catch(() => null);
    if (answer?.secure) break;
    if (i === 40) throw new Error(`Unbound did not validate dane.test: ${said}`);
    await sleep(100);
  }

  const s = await startTestServer(`[outbound]\nport = ${mx.port}\ndane = true\nconnect_timeout = "2s"\n`, {
    manualDelivery: true,
    dns: resolver,
  });
  t.teardown(() => s.close());
  const key = await makeKey(s.store);
  await makeDomain(s.store, 'example.com');
  const deliver = (to: string) => sendAndDeliver(s, key, to);
  const deferral = (m: Json) => eventsOf(m, 'email.deferred')[0]?.data.response;

  t.test('a signed record that matches: delivered over TLS', async (t) => {
    const m = await deliver('a@ee.dane.test');
    t.equal(m.recipients[0].state, 'delivered');
    t.equal(mx.received.at(-1)?.secure, true);
  });

  t.test('a signed record that does not match: deferred, nothing sent', async (t) => {
    const before = mx.received.length;
    const m = await deliver('b@wrong.dane.test');
    t.equal(m.recipients[0].state, 'deferred');
    t.match(deferral(m), { classification: 'tls_failure', message: /matches none of the TLSA records/ });
    t.equal(mx.received.length, before);
  });

  t.test(
    'a record altered after signing (a forgery that would match): Unbound refuses it, and no connection is made',
    async (t) => {
      t.match(
        await querySecure([resolver], `_${mx.port}._tcp.mx.forged.dane.test`, 'TLSA'),
        { rcode: 'SERVFAIL' },
        'bogus: the resolver will not give it',
      );
      const connections = mx.connections;
      const m = await deliver('c@forged.dane.test');
      t.equal(m.recipients[0].state, 'deferred');
      t.match(deferral(m), {
        enhanced_code: '4.7.5',
        classification: 'dns_failure',
        message: /TLSA lookup for mx\.forged\.dane\.test failed \(SERVFAIL\)/,
      });
      t.equal(mx.connections, connections);
    },
  );

  t.test('an unsigned zone: its record is not believed, delivery as without DANE', async (t) => {
    t.match(await querySecure([resolver], 'plain.test', 'MX'), { rcode: 'NOERROR', secure: false });
    const m = await deliver('d@plain.test');
    t.equal(m.recipients[0].state, 'delivered');
  });
});
