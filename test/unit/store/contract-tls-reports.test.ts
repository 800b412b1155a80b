import type { TlsCount, TlsSession } from '../../../src/domain/tls-report.js';
import { contract } from '../../helpers/stores.js';

// The store's contract on both engines for SMTP TLS reporting: sessions added to a day's counters
// sum per policy and failure, are read back per domain in one order, and a domain's report of a
// day is claimed by one holder, taken over only when its claim is stale, and once sent never again.

const sts: TlsSession['policy'] = {
  type: 'sts',
  strings: ['version: STSv1', 'mode: enforce', 'mx: mx.a.example', 'max_age: 86400'],
  domain: 'a.example',
  mx: ['mx.a.example'],
};
const none: TlsSession['policy'] = { type: 'no-policy-found', strings: [], domain: 'b.example', mx: [] };
const expired = {
  resultType: 'certificate-expired' as const,
  sendingIp: '127.0.0.1',
  receivingMx: 'mx.a.example',
  receivingIp: '127.0.0.2',
  reason: 'STARTTLS: certificate has expired',
};

const count = (
  day: string,
  policy: TlsSession['policy'],
  failure: TlsSession['failure'],
  sessions: number,
): TlsCount => ({
  day,
  policy,
  failure,
  sessions,
});

contract('TLS reports: counters sum per day, policy and failure', async (t, s) => {
  await s.tlsReports.add([count('2026-11-27', sts, null, 3), count('2026-11-27', sts, expired, 1)]);
  await s.tlsReports.add([
    count('2026-11-27', sts, null, 2),
    count('2026-11-27', none, null, 4),
    count('2026-11-28', sts, expired, 7),
  ]);
  await s.tlsReports.add([]);
  t.same(await s.tlsReports.counts('2026-11-27', 'a.example'), [
    count('2026-11-27', sts, null, 5),
    count('2026-11-27', sts, expired, 1),
  ]);
  t.same(await s.tlsReports.counts('2026-11-27'), [
    count('2026-11-27', sts, null, 5),
    count('2026-11-27', sts, expired, 1),
    count('2026-11-27', none, null, 4),
  ]);
  t.same(await s.tlsReports.domains('2026-11-27'), ['a.example', 'b.example']);
  t.same(await s.tlsReports.domains('2026-11-28'), ['a.example']);
  t.same(await s.tlsReports.counts('2026-11-26'), []);
});

contract('TLS reports: a report claimed by one holder, taken over when stale, sent once', async (t, s) => {
  const claim = { day: '2026-11-27', domain: 'a.example', reportId: 'r1', staleMs: 3_600_000 };
  t.equal(await s.tlsReports.claim({ ...claim, holder: 'n1', now: 1_000 }), true);
  t.equal(await s.tlsReports.claim({ ...claim, holder: 'n2', now: 2_000 }), false, 'held by another');
  t.equal(await s.tlsReports.claim({ ...claim, holder: 'n1', now: 3_000 }), true, 'its holder again');
  t.equal(await s.tlsReports.claim({ ...claim, holder: 'n2', now: 3_000 + 3_600_000 }), true, 'stale: taken over');
  await s.tlsReports.sent('2026-11-27', 'a.example', 'n1', 5_000, '[]');
  t.equal((await s.tlsReports.sentOn('2026-11-27'))[0]!.sent_at, null, 'not the holder: not recorded');
  await s.tlsReports.sent('2026-11-27', 'a.example', 'n2', 6_000, '["ok"]');
  t.match(await s.tlsReports.sentOn('2026-11-27'), [
    { day: '2026-11-27', domain: 'a.example', report_id: 'r1', holder: 'n2', sent_at: 6_000, results: '["ok"]' },
  ]);
  t.equal(await s.tlsReports.claim({ ...claim, holder: 'n2', now: 7_000 }), false, 'sent: never again');
  t.equal(await s.tlsReports.claim({ ...claim, holder: 'n3', now: 9e12 }), false, 'sent: never again, however late');
  await s.tlsReports.release('2026-11-27', 'a.example', 'n2');
  t.equal((await s.tlsReports.sentOn('2026-11-27')).length, 1, 'a sent report is not released');
  // A released claim is free at once.
  t.equal(await s.tlsReports.claim({ ...claim, domain: 'b.example', holder: 'n1', now: 1_000 }), true);
  await s.tlsReports.release('2026-11-27', 'b.example', 'n1');
  t.equal(await s.tlsReports.claim({ ...claim, domain: 'b.example', holder: 'n2', now: 1_001 }), true);
});

contract('TLS reports: retention drops the days older than retention.days, never the last two', async (t, s) => {
  const now = Date.UTC(2026, 10, 28, 12);
  for (const day of ['2026-11-20', '2026-11-25', '2026-11-26', '2026-11-27'])
    await s.tlsReports.add([count(day, none, null, 1)]);
  await s.tlsReports.claim({ day: '2026-11-20', domain: 'b.example', reportId: 'r', holder: 'n', now, staleMs: 1 });
  await s.admin.purgeOld(now, 0);
  t.same(await s.tlsReports.domains('2026-11-20'), ['b.example'], 'retention.days = 0: kept forever');
  await s.admin.purgeOld(now, 3);
  t.same(await s.tlsReports.domains('2026-11-20'), []);
  t.same(await s.tlsReports.sentOn('2026-11-20'), []);
  t.same(await s.tlsReports.domains('2026-11-25'), ['b.example'], 'within 3 days');
  await s.admin.purgeOld(now, 1);
  t.same(await s.tlsReports.domains('2026-11-25'), []);
  t.same(await s.tlsReports.domains('2026-11-26'), ['b.example'], 'the last two days are kept');
  t.same(await s.tlsReports.domains('2026-11-27'), ['b.example']);
});
