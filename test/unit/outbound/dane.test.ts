import { createHash, X509Certificate } from 'node:crypto';
import type { RecordType } from 'dns-packet';
import t from 'tap';
import { ManualClock } from '../../../src/lib/clock.js';
import { DnsQueryError, type SecureAnswer } from '../../../src/lib/dns-secure.js';
import { Dane, type Tlsa, verifyChain } from '../../../src/outbound/routing/dane.js';
import { fixture } from '../../helpers/fixtures.js';

const server = new X509Certificate(fixture('tls/server.pem'));
const ca = new X509Certificate(fixture('tls/ca.pem'));
const spki = (c: X509Certificate) => c.publicKey.export({ type: 'spki', format: 'der' });
const hash = (alg: string, b: Buffer) => createHash(alg).update(b).digest();
const now = Date.UTC(2026, 10, 26);
const later = Date.UTC(2200, 0, 1); // past the test certificates' hundred years

t.test(
  'DANE-EE: the server certificate or its key, by every matching type; names and dates are not checked',
  async (t) => {
    const records: Tlsa[] = [
      { usage: 3, selector: 1, matchingType: 1, data: hash('sha256', spki(server)) },
      { usage: 3, selector: 0, matchingType: 2, data: hash('sha512', server.raw) },
      { usage: 3, selector: 0, matchingType: 0, data: server.raw },
    ];
    for (const r of records) {
      t.equal(
        verifyChain([server], [r], ['mx.other.test'], now),
        null,
        `selector ${r.selector}, matching type ${r.matchingType}`,
      );
      t.equal(verifyChain([server], [r], ['mx.other.test'], later), null, 'expired: still matches');
    }
    t.match(verifyChain([ca], records, ['mx.sts.test'], now), /matches none/);
    t.match(verifyChain([], records, ['mx.sts.test'], now), /no certificate/);
  },
);

t.test('DANE-TA: a presented issuer matches, the chain is signed and in date, the name is right', async (t) => {
  const ta: Tlsa = { usage: 2, selector: 1, matchingType: 1, data: hash('sha256', spki(ca)) };
  t.equal(verifyChain([server, ca], [ta], ['mx.sts.test'], now), null);
  t.match(verifyChain([server, ca], [ta], ['mx.other.test'], now), /not valid for mx\.other\.test/);
  t.match(verifyChain([server, ca], [ta], ['mx.sts.test'], later), /outside its dates/);
  t.match(verifyChain([server], [ta], ['mx.sts.test'], now), /matches none/, 'the trust anchor must be presented');
  // A "trust anchor" the server certificate was not issued by.
  const notIssuer: Tlsa = { usage: 2, selector: 0, matchingType: 1, data: hash('sha256', server.raw) };
  t.match(verifyChain([ca, server], [notIssuer], ['mx.sts.test'], now), /chain is broken/);
  t.match(
    verifyChain([server, ca], [{ ...ta, usage: 3 }], ['mx.sts.test'], now),
    /matches none/,
    'the issuer named as DANE-EE is not the server',
  );
});

/** A resolver's answers by name and type, each with how secure it is; counts the questions. */
function zone(answers: Record<string, SecureAnswer | Error>) {
  const asked: string[] = [];
  const lookup = async (name: string, type: RecordType): Promise<SecureAnswer> => {
    asked.push(`${name} ${type}`);
    const a = answers[`${name} ${type}`] ?? { rcode: 'NXDOMAIN', secure: true, answers: [] };
    if (a instanceof Error) throw a;
    return a;
  };
  return { asked, lookup };
}
const secure = (answers: SecureAnswer['answers'] = [], ttl = 300): SecureAnswer => ({
  rcode: 'NOERROR',
  secure: true,
  answers: answers.map((a) => ({ ...a, ttl })),
});
const tlsaAnswer = (usage: number) => ({
  type: 'TLSA' as const,
  name: '_25._tcp.mx.a.test',
  data: { usage, selector: 1, matchingType: 1, certificate: Buffer.alloc(32) },
});

t.test('policy: each step needs the one before it signed; records sort into dane, encrypt and none', async (t) => {
  const clock = new ManualClock(now);
  const usable = zone({
    'a.test MX': secure(),
    'mx.a.test A': secure(),
    '_25._tcp.mx.a.test TLSA': secure([tlsaAnswer(3), tlsaAnswer(1)]),
  });
  t.match(await new Dane(usable.lookup, clock, 25).policy('a.test', 'mx.a.test', false), {
    kind: 'dane',
    records: [{ usage: 3 }],
  });
  t.same(usable.asked, ['a.test MX', 'mx.a.test A', '_25._tcp.mx.a.test TLSA']);
  const unusable = zone({
    'a.test MX': secure(),
    'mx.a.test A': secure(),
    '_25._tcp.mx.a.test TLSA': secure([tlsaAnswer(0)]),
  });
  t.same(await new Dane(unusable.lookup, clock, 25).policy('a.test', 'mx.a.test', false), { kind: 'encrypt' });
  const insecureMx = zone({ 'a.test MX': { ...secure(), secure: false } });
  t.same(await new Dane(insecureMx.lookup, clock, 25).policy('a.test', 'mx.a.test', false), { kind: 'none' });
  t.same(insecureMx.asked, ['a.test MX'], 'nothing more asked');
  const insecureHost = zone({ 'a.test MX': secure(), 'mx.a.test A': { ...secure(), secure: false } });
  t.same(await new Dane(insecureHost.lookup, clock, 25).policy('a.test', 'mx.a.test', false), { kind: 'none' });
  const insecureTlsa = zone({
    'a.test MX': secure(),
    'mx.a.test A': secure(),
    '_25._tcp.mx.a.test TLSA': { ...secure([tlsaAnswer(3)]), secure: false },
  });
  t.same(await new Dane(insecureTlsa.lookup, clock, 25).policy('a.test', 'mx.a.test', false), { kind: 'none' });
  const implicit = zone({ 'a.test A': secure(), '_587._tcp.a.test TLSA': secure([tlsaAnswer(3)]) });
  t.match(
    await new Dane(implicit.lookup, clock, 587).policy('a.test', 'a.test', true),
    { kind: 'dane' },
    'no MX: the domain is its host; TLSA at the port used',
  );
  t.same(implicit.asked, ['a.test A', '_587._tcp.a.test TLSA']);
});

t.test('policy: a failed lookup is temporary and asked again; answers are kept their TTL on the clock', async (t) => {
  const clock = new ManualClock(now);
  const failing = zone({
    'a.test MX': secure(),
    'mx.a.test A': secure(),
    '_25._tcp.mx.a.test TLSA': { rcode: 'SERVFAIL', secure: false, answers: [] },
  });
  const dane = new Dane(failing.lookup, clock, 25);
  t.match(await dane.policy('a.test', 'mx.a.test', false), { kind: 'temporary', detail: /SERVFAIL/ });
  t.match(await dane.policy('a.test', 'mx.a.test', false), { kind: 'temporary' });
  t.equal(failing.asked.filter((q) => q.endsWith('TLSA')).length, 2, 'a failure is not kept');
  t.equal(failing.asked.filter((q) => q.endsWith('MX')).length, 1, 'an answer is');
  clock.advance(301_000);
  await dane.policy('a.test', 'mx.a.test', false);
  t.equal(failing.asked.filter((q) => q.endsWith('MX')).length, 2, 'until its TTL is over');
  const timeout = zone({ 'a.test MX': new DnsQueryError('127.0.0.1:53 did not answer in 5000 ms') });
  t.match(await new Dane(timeout.lookup, clock, 25).policy('a.test', 'mx.a.test', false), {
    kind: 'temporary',
    detail: /did not answer/,
  });
});
