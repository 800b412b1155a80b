// The deliverability doctor (docs/operations.md, "Deliverability") against a loopback DNS zone
// broken on purpose: a missing PTR, a PTR naming another host, an address on a blocklist, SPF
// whose include chain misses one address, SPF over ten lookups, a DKIM record for an old key, the
// key a rotation replaced withdrawn before its grace ended, no DMARC. `doctor --json` reports each
// fault with its fix and nothing else; on the zone fixed, every check passes; a DNS server that
// answers SERVFAIL is "no answer", never a failed check.

import t from 'tap';
import type { TestDnsServer } from '../../support/dns-server.js';
import { json, runCli } from '../helpers/cli.js';
import type { Json } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const ADDRESSES = ['192.0.2.1', '192.0.2.2', '192.0.2.3'];
const EHLO = 'mx.test.posthaste';
const s = await startMailEnv({
  domains: [],
  outbound: `source_addresses = ${JSON.stringify(ADDRESSES)}\n`,
  toml: '[doctor]\ndnsbl = ["bl.test"]\n',
});
const { dns, store } = s;
const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);

const OLD_KEY = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAold';
const keys = new Map<string, { selector: string; key: string }[]>();
for (const name of ['alpha.example', 'beta.example', 'gamma.example']) {
  const d = await store.domains.add({ customerId: 1, name, receiving: name === 'gamma.example', now: Date.now() });
  await store.domains.setVerified(d.id, Date.now());
  await store.domains.setReturnPath(d.id, `bounces.${name}`);
  // alpha.example is in a DKIM rotation: its next key's record is checked too.
  const row = name === 'alpha.example' ? await store.domains.rotateDkim(d.id, Date.now()) : d;
  keys.set(name, [
    { selector: row.dkim_selector, key: row.dkim_public_key },
    ...(row.next_dkim_selector ? [{ selector: row.next_dkim_selector, key: row.next_dkim_public_key! }] : []),
  ]);
}
// gamma.example switched keys a day ago: the key it replaced must stay published through the grace.
const gamma = (await store.domains.find('gamma.example'))!;
const gammaOld = { selector: gamma.dkim_selector, key: gamma.dkim_public_key };
await store.domains.rotateDkim(gamma.id, Date.now() - 86_400_000);
await store.domains.switchDkim(gamma.id, Date.now() - 86_400_000);
const gammaNow = (await store.domains.find('gamma.example'))!;
keys.set('gamma.example', [{ selector: gammaNow.dkim_selector, key: gammaNow.dkim_public_key }]);

const rev = (ip: string) => `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
const mx = [{ preference: 10, exchange: EHLO }];

/** The zone, broken on purpose or fixed. */
function plant(zone: TestDnsServer, broken: boolean): void {
  zone.zone.clear();
  zone.set(EHLO, { A: ADDRESSES });
  if (!broken) zone.set(rev('192.0.2.1'), { PTR: [EHLO] });
  zone.set(rev('192.0.2.2'), { PTR: [broken ? 'other.example' : EHLO] });
  zone.set(rev('192.0.2.3'), { PTR: [EHLO] });
  if (broken) zone.set('3.2.0.192.bl.test', { A: ['127.0.0.2'], TXT: ['listed for spam traps'] });
  for (const [name, ks] of keys) {
    ks.forEach((k, i) => {
      const stale = broken && name === 'beta.example' && i === 0;
      zone.set(`${k.selector}._domainkey.${name}`, { TXT: [`v=DKIM1; k=rsa; p=${stale ? OLD_KEY : k.key}`] });
    });
    if (broken && name === 'gamma.example') continue;
    if (name === 'gamma.example')
      zone.set(`${gammaOld.selector}._domainkey.gamma.example`, { TXT: [`v=DKIM1; k=rsa; p=${gammaOld.key}`] });
    zone.set(`_dmarc.${name}`, { TXT: ['v=DMARC1; p=quarantine'] });
  }
  for (const name of keys.keys()) zone.set(`bounces.${name}`, { MX: mx });
  zone.set('gamma.example', { MX: mx });
  // alpha: an include chain that misses 192.0.2.3 while broken.
  zone.set('bounces.alpha.example', { TXT: ['v=spf1 include:_spf.alpha.example ~all'] });
  zone.set('_spf.alpha.example', { TXT: ['v=spf1 ip4:192.0.2.1 include:_spf2.alpha.example ~all'] });
  zone.set('_spf2.alpha.example', { TXT: [`v=spf1 ip4:192.0.2.2${broken ? '' : ' ip4:192.0.2.3'} -all`] });
  // beta: eleven includes before the address that matches, while broken.
  const includes = Array.from({ length: 11 }, (_, i) => `include:n${i}.beta.example`).join(' ');
  for (let i = 0; i < 11; i++) zone.set(`n${i}.beta.example`, { TXT: [`v=spf1 ip4:198.51.100.${i} -all`] });
  zone.set('bounces.beta.example', {
    TXT: [broken ? `v=spf1 ${includes} ip4:192.0.2.0/24 ~all` : 'v=spf1 ip4:192.0.2.0/24 ~all'],
  });
  zone.set('bounces.gamma.example', { TXT: ['v=spf1 ip4:192.0.2.1 ip4:192.0.2.2 ip4:192.0.2.3 -all'] });
}

const failing = (report: Json) =>
  (report.checks as Json[]).filter((c) => c.state !== 'pass').map((c) => [c.check, c.domain, c.subject, c.state]);

t.test('the broken zone: each fault reported with its fix, and nothing else', async (t) => {
  plant(dns, true);
  const r = await cli('doctor', '--json');
  t.equal(r.code, 1, 'a failing check exits 1');
  const report = json<Json>(r);
  t.same(
    failing(report).sort(),
    [
      ['dkim', 'beta.example', `${keys.get('beta.example')![0]!.selector}._domainkey.beta.example`, 'fail'],
      ['dmarc', 'gamma.example', '_dmarc.gamma.example', 'fail'],
      ['dkim_previous', 'gamma.example', `${gammaOld.selector}._domainkey.gamma.example`, 'fail'],
      ['dnsbl', null, '192.0.2.3 on bl.test', 'fail'],
      ['reverse_dns', null, '192.0.2.1', 'fail'],
      ['reverse_dns', null, '192.0.2.2', 'fail'],
      ['spf', 'alpha.example', 'bounces.alpha.example', 'fail'],
      ['spf', 'beta.example', 'bounces.beta.example', 'fail'],
    ].sort(),
  );
  const fix = (check: string, domain: string | null) =>
    (report.checks as Json[]).find((c) => c.check === check && c.domain === domain && c.state === 'fail')!;
  t.match(fix('reverse_dns', null), {
    found: /192\.0\.2\.1 has no PTR record/,
    fix: /reverse DNS \(PTR record\) to mx\.test\.posthaste/,
  });
  t.match(
    (report.checks as Json[]).find((c) => c.subject === '192.0.2.2'),
    {
      found: /names other\.example, not the EHLO name mx\.test\.posthaste/,
      fix: /PTR record\) to mx\.test\.posthaste/,
    },
  );
  t.match(fix('dnsbl', null), { found: /listed on bl\.test: 127\.0\.0\.2 \(listed for spam traps\)/, fix: /removal/ });
  t.match(fix('spf', 'alpha.example'), {
    found: /does not cover 192\.0\.2\.3 \(softfail\)/,
    fix: /add ip4:192\.0\.2\.3 to the SPF record at bounces\.alpha\.example/,
  });
  t.match(fix('spf', 'beta.example'), { found: /more than 10 DNS lookups/, fix: /replace include:/ });
  const beta = keys.get('beta.example')![0]!;
  t.match(fix('dkim', 'beta.example'), {
    found: /another key/,
    fix: `publish the TXT record ${beta.selector}._domainkey.beta.example`,
  });
  t.match(fix('dkim', 'beta.example').fix, beta.key.slice(0, 200), 'the fix holds the signing key');
  t.match(fix('dmarc', 'gamma.example'), {
    found: /no DMARC record/,
    fix: /_dmarc\.gamma\.example with the value "v=DMARC1; p=none"/,
  });
  t.ok(
    (report.checks as Json[]).some((c) => c.check === 'dkim_next' && c.state === 'pass'),
    "the rotation's next key is checked",
  );
  t.match(fix('dkim_previous', 'gamma.example'), {
    found: /has no DKIM record: receivers cannot check the previous key of the rotation/,
    fix: `publish the TXT record ${gammaOld.selector}._domainkey.gamma.example`,
  });
  t.same(report.summary, { pass: report.checks.length - 8, fail: 8, no_answer: 0 });

  const human = await cli('doctor');
  t.match(human.stdout, /FAIL reverse_dns 192\.0\.2\.1: 192\.0\.2\.1 has no PTR record\n\s+fix: /);
});

t.test('the zone fixed: every check passes', async (t) => {
  plant(dns, false);
  const r = await cli('doctor', '--json');
  t.equal(r.code, 0, r.stderr);
  const report = json<Json>(r);
  t.same(failing(report), []);
  t.same([...new Set((report.checks as Json[]).map((c) => c.check))].sort(), [
    'alignment',
    'dkim',
    'dkim_next',
    'dkim_previous',
    'dmarc',
    'dnsbl',
    'mx',
    'return_path_mx',
    'reverse_dns',
    'spf',
  ]);
  const one = json<Json>(await cli('doctor', '--json', '--domain', 'gamma.example'));
  t.same(
    [...new Set((one.checks as Json[]).map((c) => c.domain))],
    ['gamma.example'],
    '--domain checks that domain only',
  );
  const none = await cli('doctor', '--domain', 'nope.example');
  t.not(none.code, 0);
  t.match(none.stderr, /no domain named "nope\.example"/);
});

t.test('a DNS server answering SERVFAIL is "no answer", never a failed check', async (t) => {
  plant(dns, false);
  dns.failures.set(rev('192.0.2.1'), 'SERVFAIL');
  dns.failures.set('_dmarc.gamma.example', 'SERVFAIL');
  dns.failures.set('bounces.alpha.example', 'SERVFAIL');
  t.teardown(() => dns.failures.clear());
  const r = await cli('doctor', '--json');
  t.equal(r.code, 0, 'no check failed');
  const report = json<Json>(r);
  t.same(
    failing(report).sort(),
    [
      ['alignment', 'gamma.example', 'gamma.example', 'no_answer'],
      ['dmarc', 'gamma.example', '_dmarc.gamma.example', 'no_answer'],
      ['return_path_mx', 'alpha.example', 'bounces.alpha.example', 'no_answer'],
      ['reverse_dns', null, '192.0.2.1', 'no_answer'],
      ['spf', 'alpha.example', 'bounces.alpha.example', 'no_answer'],
    ].sort(),
  );
  t.match(
    (report.checks as Json[]).find((c) => c.subject === '192.0.2.1'),
    { found: /SERVFAIL.*dns\.servers/, fix: null },
  );
});
