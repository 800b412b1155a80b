// DMARC aggregate reports as the large receivers mail them (reports/dmarc-aggregate.ts): Google's
// zip, Microsoft's and Yahoo's gzip, the bare XML, the successor schema's namespace; each read
// with counts that match its XML, and hostile or broken ones refused without harm.

import { gzipSync } from 'node:zlib';
import { zipSync } from 'fflate';
import t from 'tap';
import { MAX_AGGREGATE_XML_BYTES, readAggregateReports } from '../../../src/reports/dmarc-aggregate.js';
import { reportMail as mail, RECORDS, reportXml } from '../../helpers/dmarc.js';

/** The sum of <count> in a document, read with a regular expression rather than the parser under test. */
const xmlCount = (xml: string) => [...xml.matchAll(/<count>(\d+)<\/count>/g)].reduce((n, m) => n + Number(m[1]), 0);

t.test('as Google, Microsoft and Yahoo send them', async (t) => {
  const google = reportXml('google.com', 'noreply-dmarc-support@google.com', '10293847561', RECORDS);
  const microsoft = reportXml('Enterprise Outlook', 'dmarcreport@microsoft.com', 'a1b2c3d4e5f6', RECORDS, { ms: true });
  const yahoo = reportXml('Yahoo', 'dmarchelp@yahooinc.com', '1795737600.779271', RECORDS.slice(0, 2));
  const cases: Array<[string, Buffer, string]> = [
    [
      'google.com, zip',
      mail(
        'noreply-dmarc-support@google.com',
        'google.com!acme.example!1795737600!1795823999.zip',
        'application/zip',
        Buffer.from(zipSync({ 'google.com!acme.example!1795737600!1795823999.xml': Buffer.from(google) })),
      ),
      google,
    ],
    [
      'Microsoft, gzip',
      mail(
        'dmarcreport@microsoft.com',
        'enterprise.protection.outlook.com!acme.example!1795737600!1795823999.xml.gz',
        'application/gzip',
        gzipSync(microsoft),
      ),
      microsoft,
    ],
    [
      'Yahoo, gzip',
      mail(
        'noreply@dmarc.yahoo.com',
        'yahoo.com!acme.example!1795737600!1795823999.xml.gz',
        'application/gzip',
        gzipSync(yahoo),
      ),
      yahoo,
    ],
    ['bare XML', mail('dmarc@small.example', 'report.xml', 'text/xml', Buffer.from(google)), google],
  ];
  for (const [what, raw, xml] of cases) {
    const reads = readAggregateReports(raw);
    t.equal(reads.length, 1, `${what}: one report`);
    const r = reads[0]!;
    if (r.kind !== 'report') {
      t.fail(`${what}: ${r.error}`);
      continue;
    }
    t.equal(
      r.report.rows.reduce((n, row) => n + row.count, 0),
      xmlCount(xml),
      `${what}: the counts sum as the XML's`,
    );
    t.equal(r.report.rows.length, [...xml.matchAll(/<record>/g)].length, `${what}: every record`);
    t.equal(r.report.domain, 'acme.example');
    t.equal(r.report.begin, 1795737600_000);
    t.equal(r.report.end, 1795823999_000);
    t.same(r.report.policy, { p: 'quarantine', sp: 'none', pct: 100, adkim: 'r', aspf: 'r' });
  }
  const ms = readAggregateReports(cases[1]![1])[0]!;
  if (ms.kind === 'report') {
    t.equal(ms.report.org, 'Enterprise Outlook');
    t.same(ms.report.rows[2], {
      sourceIp: '198.51.100.7',
      count: 41,
      disposition: 'none',
      dkimAligned: true,
      spfAligned: false,
      headerFrom: 'acme.example',
      envelopeFrom: null,
      dkim: [
        { domain: 'acme.example', detail: 'ph1', result: 'pass' },
        { domain: 'esp.example', detail: 's1', result: 'pass' },
      ],
      spf: [{ domain: 'esp.example', detail: 'mfrom', result: 'pass' }],
    });
  }
});

t.test("the successor schema's namespace", async (t) => {
  const xml = reportXml('mail.example', 'dmarc@mail.example', 'r-2', RECORDS, {
    ns: 'urn:ietf:params:xml:ns:dmarc-2.0',
  });
  const [r] = readAggregateReports(mail('dmarc@mail.example', 'x.xml.gz', 'application/gzip', gzipSync(xml)));
  t.equal(r?.kind, 'report');
  if (r?.kind === 'report') t.equal(r.report.rows.length, 3);
});

t.test('hostile and broken reports are refused, each saying why', async (t) => {
  const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]><feedback><report_metadata><org_name>&lol2;</org_name></report_metadata></feedback>`;
  const external = `<?xml version="1.0"?><!DOCTYPE feedback [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><feedback><report_metadata><org_name>&xxe;</org_name></report_metadata></feedback>`;
  const deep = `<feedback>${'<a>'.repeat(5000)}${'</a>'.repeat(5000)}</feedback>`;
  const bomb = gzipSync(Buffer.alloc(MAX_AGGREGATE_XML_BYTES + 1024, 0x20));
  const cases: Array<[string, Buffer, RegExp]> = [
    ['entity expansion', mail('x@y', 'a.xml', 'text/xml', Buffer.from(laughs)), /DOCTYPE/],
    ['external entity', mail('x@y', 'a.xml', 'text/xml', Buffer.from(external)), /DOCTYPE/],
    ['deep nesting', mail('x@y', 'a.xml', 'text/xml', Buffer.from(deep)), /nested/],
    ['a gzip bomb', mail('x@y', 'a.xml.gz', 'application/gzip', bomb), /size limit/],
    ['a damaged gzip', mail('x@y', 'a.xml.gz', 'application/gzip', gzipSync('<feedback/>').subarray(0, 12)), /damaged/],
    ['not a gzip', mail('x@y', 'a.xml.gz', 'application/gzip', Buffer.from('plain text')), /not the gzip/],
    ['no metadata', mail('x@y', 'a.xml', 'text/xml', Buffer.from('<feedback><record/></feedback>')), /report_metadata/],
    [
      'a count that is not a number',
      mail(
        'x@y',
        'a.xml',
        'text/xml',
        Buffer.from(reportXml('o', 'e@o', '1', RECORDS).replace('<count>1200</count>', '<count>12e9</count>')),
      ),
      /whole number/,
    ],
    ['not XML', mail('x@y', 'a.xml', 'text/xml', Buffer.from('<feedback><report_metadata>')), /missing|parse/],
  ];
  for (const [what, raw, why] of cases) {
    const reads = readAggregateReports(raw);
    t.equal(reads[0]?.kind, 'unreadable', what);
    if (reads[0]?.kind === 'unreadable') t.match(reads[0].error, why, `${what}: ${reads[0].error}`);
  }
  const none = readAggregateReports(Buffer.from('From: a@b\r\nSubject: hi\r\n\r\nno report here\r\n'));
  t.same(none, [{ kind: 'unreadable', name: '', error: 'no XML, gzip or zip attachment was found' }]);
});
