import type { DmarcReportInput } from '../../../src/store/model.js';
import { contract, sender } from '../../helpers/stores.js';

// The store's contract on both engines for DMARC aggregate reports: a report is kept once (its
// org and report id), with the customer whose domain it is about or none; the summary sums rows
// per UTC day and source address, counts aligned mail by its count, and a customer sees only its
// own domain's; unreadable mails are kept and counted.

const DAY = 86_400_000;
const day1 = Date.UTC(2026, 10, 26);

function report(over: Partial<DmarcReportInput> & { reportId: string }): DmarcReportInput {
  return {
    org: 'google.com',
    email: 'noreply-dmarc-support@google.com',
    domain: 'example.com',
    begin: day1,
    end: day1 + DAY - 1000,
    policy: { p: 'none', sp: null, pct: 100, adkim: 'r', aspf: 'r' },
    rows: [
      row('192.0.2.10', 100, true, true),
      row('198.51.100.7', 7, false, false),
      row('192.0.2.10', 20, true, false),
    ],
    ...over,
  };
}

const row = (sourceIp: string, count: number, dkimAligned: boolean, spfAligned: boolean) => ({
  sourceIp,
  count,
  disposition: dkimAligned || spfAligned ? 'none' : 'quarantine',
  dkimAligned,
  spfAligned,
  headerFrom: 'example.com',
  envelopeFrom: null,
  dkim: [{ domain: 'example.com', detail: 'ph1', result: dkimAligned ? 'pass' : 'fail' }],
  spf: [{ domain: 'bounces.example.com', detail: null, result: spfAligned ? 'pass' : 'fail' }],
});

contract('DMARC reports: kept once, summed per day and source, kept apart for a domain no one holds', async (t, s) => {
  const who = await sender(s);
  const raw = Buffer.from('From: a@b\r\n\r\nx');
  t.same(
    await s.dmarc.keep({
      reports: [
        report({ reportId: 'g1' }),
        report({ reportId: 'm1', org: 'Enterprise Outlook', rows: [row('192.0.2.10', 5, true, true)] }),
      ],
      unreadable: [],
      raw,
      receivedAt: day1 + DAY,
    }),
    { stored: 2, duplicate: 0, unreadable: 0 },
  );
  // The same report again (a receiver's retry): not counted twice.
  t.same(await s.dmarc.keep({ reports: [report({ reportId: 'g1' })], unreadable: [], raw, receivedAt: day1 + DAY }), {
    stored: 0,
    duplicate: 1,
    unreadable: 0,
  });
  await s.dmarc.keep({
    reports: [
      report({
        reportId: 'g2',
        begin: day1 + DAY,
        end: day1 + 2 * DAY - 1000,
        rows: [row('192.0.2.10', 9, false, true)],
      }),
    ],
    unreadable: [{ name: 'x.xml.gz', error: 'the gzip is damaged' }],
    raw,
    receivedAt: day1 + 2 * DAY,
  });
  await s.dmarc.keep({
    reports: [report({ reportId: 'f1', domain: 'nobody.example' })],
    unreadable: [],
    raw,
    receivedAt: day1,
  });

  const q = { domain: 'example.com', since: day1, until: day1 + 3 * DAY };
  const summary = await s.dmarc.summary(q);
  t.same(summary, [
    {
      day: '2026-11-27',
      source_ip: '192.0.2.10',
      messages: 9,
      dkim_aligned: 0,
      spf_aligned: 9,
      dmarc_pass: 9,
      reporters: ['google.com'],
    },
    {
      day: '2026-11-26',
      source_ip: '192.0.2.10',
      messages: 125,
      dkim_aligned: 125,
      spf_aligned: 105,
      dmarc_pass: 125,
      reporters: ['Enterprise Outlook', 'google.com'],
    },
    {
      day: '2026-11-26',
      source_ip: '198.51.100.7',
      messages: 7,
      dkim_aligned: 0,
      spf_aligned: 0,
      dmarc_pass: 0,
      reporters: ['google.com'],
    },
  ]);
  t.same(await s.dmarc.summary({ ...q, customerId: who.customerId }), summary, "the customer's own domain");
  t.same(await s.dmarc.summary({ ...q, customerId: who.customerId + 100 }), [], "another customer's: nothing");
  t.same(await s.dmarc.summary({ ...q, since: day1 + DAY }), summary.slice(0, 1), 'the period bounds it');
  t.same(await s.dmarc.counts(), { reports: 4, foreign: 1, unreadable: 1 });
});
