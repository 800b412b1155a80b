import t from 'tap';
import { expandIp, judgeListing, judgeReverseDns, reverseName } from '../../../src/domain/doctor.js';
import { aligned, judgeAlignment, judgeDmarc, judgeSpf } from '../../../src/domain/doctor-domain.js';

// The doctor's rules over DNS answers (docs/operations.md, "Deliverability"), from tables.

t.test('an address reversed under a zone: PTR names and blocklist names, IPv4 and IPv6', async (t) => {
  t.equal(reverseName('192.0.2.7', 'in-addr.arpa'), '7.2.0.192.in-addr.arpa');
  t.equal(reverseName('192.0.2.7', 'zen.spamhaus.org.'), '7.2.0.192.zen.spamhaus.org');
  t.equal(expandIp('2001:db8::1'), '2001:0db8:0000:0000:0000:0000:0000:0001');
  t.equal(
    reverseName('2001:db8::1', 'ip6.arpa'),
    '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa',
  );
});

t.test('a blocklist: not listed, listed with its reason, a refusal, no answer', async (t) => {
  t.match(judgeListing('192.0.2.7', 'bl.test', { kind: 'none' }, []), { state: 'pass', fix: null });
  t.match(judgeListing('192.0.2.7', 'bl.test', { kind: 'answered', records: ['127.0.0.2'] }, ['spam\x1b[2J']), {
    state: 'fail',
    found: '192.0.2.7 is listed on bl.test: 127.0.0.2 (spam?[2J)',
  });
  // Spamhaus's "query via public resolver": not a listing.
  t.match(judgeListing('192.0.2.7', 'zen.spamhaus.org', { kind: 'answered', records: ['127.255.255.254'] }, []), {
    state: 'no_answer',
    found: /refused the query.*dns\.servers/,
  });
  t.match(judgeListing('192.0.2.7', 'bl.test', { kind: 'no_answer', why: 'SERVFAIL' }, []), { state: 'no_answer' });
});

t.test('reverse DNS: the PTR names the EHLO name, which resolves back', async (t) => {
  const src = { address: '2001:db8::1', ehlo: 'mx.example.net' };
  const ptr = { kind: 'answered' as const, records: ['MX.example.net.'] };
  t.match(judgeReverseDns(src, ptr, { kind: 'answered', records: ['2001:db8:0::1'] }), { state: 'pass' });
  t.match(judgeReverseDns(src, ptr, { kind: 'answered', records: ['2001:db8::2'] }), {
    state: 'fail',
    fix: 'publish an AAAA record for mx.example.net with the value 2001:db8::1',
  });
  t.match(judgeReverseDns(src, ptr, { kind: 'none' }), { state: 'fail' });
  t.match(judgeReverseDns(src, { kind: 'no_answer', why: 'timed out' }, null), { state: 'no_answer', fix: null });
});

t.test('SPF verdicts: pass, not covered, none, permerror, temperror', async (t) => {
  const v = (address: string, result: string, text = '') => ({ address, result, text, lookups: 1 });
  const rec = 'v=spf1 ip4:192.0.2.7 ip6:2001:db8::1 ~all';
  t.match(judgeSpf('a.example', 'bounces.a.example', [v('192.0.2.7', 'pass')], rec), { state: 'pass' });
  t.match(judgeSpf('a.example', 'h', [v('192.0.2.7', 'pass'), v('2001:db8::1', 'fail')], rec), {
    state: 'fail',
    fix: /^add ip6:2001:db8::1 to the SPF record at h/,
  });
  t.match(judgeSpf('a.example', 'h', [v('192.0.2.7', 'none')], rec), {
    state: 'fail',
    fix: `publish the TXT record h with the value "${rec}"`,
  });
  t.match(judgeSpf('a.example', 'h', [v('192.0.2.7', 'permerror', 'x: Too many void DNS results')], rec), {
    found: /more than two names that do not exist/,
  });
  t.match(judgeSpf('a.example', 'h', [v('192.0.2.7', 'pass'), v('192.0.2.8', 'temperror', 'DNS timeout')], rec), {
    state: 'no_answer',
  });
  t.match(judgeSpf('a.example', 'h', [v('192.0.2.7', 'softfail'), v('192.0.2.8', 'temperror')], rec), {
    state: 'fail',
  });
});

t.test('DMARC: none, two records, no policy, a policy', async (t) => {
  const found = (...texts: string[]) => ({ kind: 'answered' as const, records: { name: '_dmarc.a.example', texts } });
  t.match(judgeDmarc('a.example', { kind: 'none' }), { state: 'fail', fix: /v=DMARC1; p=none/ });
  t.match(judgeDmarc('a.example', found('v=DMARC1; p=none', 'v=DMARC1; p=reject')), { state: 'fail', fix: /keep one/ });
  t.match(judgeDmarc('a.example', found('v=DMARC1; rua=mailto:x@a.example')), { state: 'fail' });
  t.match(judgeDmarc('a.example', found('v=DMARC1; p=Reject; adkim=s')), {
    state: 'pass',
    found: 'DMARC at _dmarc.a.example: p=reject',
  });
});

t.test('alignment: relaxed and strict, the return path held or not', async (t) => {
  t.ok(aligned('bounces.a.example', 'a.example', 'r'));
  t.notOk(aligned('bounces.a.example', 'a.example', 's'));
  t.notOk(aligned('bounces.server.example', 'a.example', 'r'));
  t.ok(aligned('x.a.co.uk', 'a.co.uk', 'r'), 'the organizational domain from the public suffix list');
  const judge = (envelope: string, dmarc: string | null) =>
    judgeAlignment('a.example', envelope, 'bounces.a.example', 'bounces.server.example', dmarc);
  t.match(judge('bounces.a.example', 'v=DMARC1; p=none'), { state: 'pass' });
  t.match(judge('bounces.server.example', null), {
    state: 'fail',
    fix: /publish the CNAME record bounces\.a\.example pointing to bounces\.server\.example\..*domains verify a\.example/,
  });
  t.match(judge('bounces.a.example', 'v=DMARC1; p=none; aspf=s'), { state: 'fail', fix: /remove aspf=s/ });
});
