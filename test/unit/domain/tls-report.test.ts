import t from 'tap';
import {
  buildReport,
  isDay,
  parseTlsRptRecord,
  reportFileName,
  resultTypeOf,
  type TlsCount,
} from '../../../src/domain/tls-report.js';

// The pure rules of TLS reports (RFC 8460): a failure's words to its result type, the TLS-RPT
// record's rua URIs, a day's counters to the report, the file name.

t.test('a TLS failure in the client words is the RFC 8460 result type', async (t) => {
  const table: Array<[string, string]> = [
    ['the server does not offer STARTTLS, and TLS is required', 'starttls-not-supported'],
    ['the server refused STARTTLS, and TLS is required: 454 4.7.0 TLS not available', 'starttls-not-supported'],
    ['STARTTLS: certificate has expired', 'certificate-expired'],
    ['CERT_HAS_EXPIRED', 'certificate-expired'],
    ["STARTTLS: Hostname/IP does not match certificate's altnames: Host: mx2.a.test.", 'certificate-host-mismatch'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'certificate-host-mismatch'],
    ['STARTTLS: DANE: the certificate is not valid for mx.a.test', 'certificate-host-mismatch'],
    ['STARTTLS: self-signed certificate', 'certificate-not-trusted'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'certificate-not-trusted'],
    ['STARTTLS: unable to verify the first certificate', 'certificate-not-trusted'],
    ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'certificate-not-trusted'],
    ['STARTTLS: DANE: the certificate matches none of the TLSA records', 'validation-failure'],
    ['STARTTLS: write EPROTO wrong version number', 'validation-failure'],
  ];
  for (const [words, type] of table) t.equal(resultTypeOf(words), type, words);
});

t.test('the TLS-RPT record: its rua URIs, mailto and https only; anything else is no record', async (t) => {
  t.same(parseTlsRptRecord('v=TLSRPTv1; rua=mailto:tls@a.test,https://r.a.test/v1'), [
    'mailto:tls@a.test',
    'https://r.a.test/v1',
  ]);
  t.same(parseTlsRptRecord('v=TLSRPTv1;rua=mailto:tls@a.test'), ['mailto:tls@a.test']);
  t.same(parseTlsRptRecord('v=TLSRPTv1; rua=http://r.a.test/, https://r.a.test/'), ['https://r.a.test/']);
  t.equal(parseTlsRptRecord('v=TLSRPTv1; rua=http://r.a.test/'), null);
  t.equal(parseTlsRptRecord('v=STSv1; id=1'), null);
  t.equal(parseTlsRptRecord('v=TLSRPTv1;'), null);
});

t.test("a day's counters make one report per domain: policies summed, failures listed", async (t) => {
  const policy = { type: 'tlsa' as const, strings: ['3 1 1 ab'], domain: 'a.test', mx: ['mx.a.test'] };
  const failure = {
    resultType: 'validation-failure' as const,
    sendingIp: '192.0.2.1',
    receivingMx: 'mx.a.test',
    receivingIp: '198.51.100.1',
    reason: 'no match',
  };
  const counts: TlsCount[] = [
    { day: '2026-11-27', policy, failure: null, sessions: 5 },
    { day: '2026-11-27', policy, failure, sessions: 2 },
    { day: '2026-11-26', policy, failure, sessions: 9 },
    { day: '2026-11-27', policy: { ...policy, domain: 'b.test' }, failure: null, sessions: 9 },
  ];
  const header = {
    organization: 'O',
    contact: 'c@o.test',
    submitter: 'mx.o.test',
    day: '2026-11-27',
    domain: 'a.test',
  };
  t.same(buildReport(header, counts), {
    'organization-name': 'O',
    'date-range': { 'start-datetime': '2026-11-27T00:00:00Z', 'end-datetime': '2026-11-27T23:59:59Z' },
    'contact-info': 'c@o.test',
    'report-id': '2026.11.27T00.00.00Z+a.test@mx.o.test',
    policies: [
      {
        policy: {
          'policy-type': 'tlsa',
          'policy-string': ['3 1 1 ab'],
          'policy-domain': 'a.test',
          'mx-host': ['mx.a.test'],
        },
        summary: { 'total-successful-session-count': 5, 'total-failure-session-count': 2 },
        'failure-details': [
          {
            'result-type': 'validation-failure',
            'sending-mta-ip': '192.0.2.1',
            'receiving-mx-hostname': 'mx.a.test',
            'receiving-ip': '198.51.100.1',
            'failed-session-count': 2,
            'failure-reason-code': 'no match',
          },
        ],
      },
    ],
  });
  t.equal(reportFileName(header), 'mx.o.test!a.test!1795737600!1795823999!20261127.json.gz');
  t.ok(isDay('2026-11-27'));
  t.notOk(isDay('2026-02-30'));
  t.notOk(isDay('27-11-2026'));
});
