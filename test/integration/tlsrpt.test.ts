import { createHash, X509Certificate } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import Ajv2020 from 'ajv/dist/2020.js';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { TLS_RESULT_TYPES, utcDay } from '../../src/domain/tls-report.js';
import { ManualClock } from '../../src/lib/clock.js';
import { TestMx } from '../../support/mx-server.js';
import { runCli } from '../helpers/cli.js';
import { publishDomainTxt } from '../helpers/env.js';
import { fixture, fixturePath } from '../helpers/fixtures.js';
import type { Json } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

// SMTP TLS reports (RFC 8460) end to end on loopback: a day of deliveries under MTA-STS and DANE,
// failures and successes, counted per connection; the next day's run sends each domain that
// publishes a TLS-RPT record its report, gzipped, by mail through the queue (DKIM-signed) and by
// https POST, once; a domain without a record gets nothing.

const serverPem = fixture('tls/server.pem');
const caPem = fixture('tls/ca.pem');
const tls = { key: fixture('tls/server-key.pem'), cert: Buffer.concat([serverPem, caPem]) };
const spki = (c: X509Certificate) => c.publicKey.export({ type: 'spki', format: 'der' });
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest();
const daneEe = { usage: 3, selector: 1, matchingType: 1, certificate: sha256(spki(new X509Certificate(serverPem))) };
const wrongEe = { usage: 3, selector: 1, matchingType: 1, certificate: sha256(Buffer.from('another key')) };

// The MTA-STS policy server, and the https report receiver (a certificate for 127.0.0.1 from the test CA).
const posted: Array<{ url: string; type: string | undefined; body: Buffer }> = [];
const web = https.createServer(tls, (req, res) => {
  if (req.url === '/.well-known/mta-sts.txt')
    return res
      .writeHead(200)
      .end(
        req.headers.host === 'mta-sts.stsbad.test'
          ? 'version: STSv1\nmode: testing\nmx: mx.stsbad.test\nmax_age: 86400\n'
          : 'version: STSv1\nmode: enforce\nmx: *.sts.test\nmax_age: 86400\n',
      );
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    posted.push({ url: req.url ?? '', type: req.headers['content-type'], body: Buffer.concat(chunks) });
    res.writeHead(201).end();
  });
});
await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', () => resolve()));
t.teardown(() => new Promise((resolve) => web.close(resolve)));
const webPort = (web.address() as AddressInfo).port;

const day0 = Date.UTC(2026, 10, 27, 9);
const clock = new ManualClock(day0);
const day = utcDay(day0);
const s = await startMailEnv({
  // The environment's MX: smtp-server's self-signed certificate, on 127.0.0.1.
  outbound: `dane = true\nconnect_timeout = "2s"\nmta_sts_port = ${webPort}\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
  toml:
    '[tlsrpt]\nfrom = "tlsrpt@example.com"\norganization_name = "Posthaste Test"\ncontact_info = "tls@example.com"\n' +
    `[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
  daemon: { clock },
});
const { dns, key } = s;
const selfSigned = s.mx;
// An MX with the test CA's certificate (for mx.sts.test) on 127.0.0.8, and one with a certificate
// no CA signed on 127.0.0.9, on the same port.
const valid = await new TestMx('127.0.0.8', tls).start(selfSigned.port);
const untrusted = await new TestMx('127.0.0.9', {
  key: fixture('tls/self-signed-key.pem'),
  cert: fixture('tls/self-signed.pem'),
}).start(selfSigned.port);
t.teardown(() => Promise.all([valid.stop(), untrusted.stop()]));
await publishDomainTxt(s.store, dns, 'example.com');
const tlsa = (host: string) => `_${selfSigned.port}._tcp.${host}`;
const rua = (...uris: string[]) => ({ TXT: [`v=TLSRPTv1; rua=${uris.join(',')}`] });

// sts.test: enforce; its first MX presents a certificate no CA signed, its second one for another
// name, its third a valid one.
dns.set('sts.test', {
  MX: [
    { preference: 10, exchange: 'mx1.sts.test' },
    { preference: 20, exchange: 'mx2.sts.test' },
    { preference: 30, exchange: 'mx.sts.test' },
  ],
});
dns.set('mx1.sts.test', { A: ['127.0.0.9'] });
dns.set('mx2.sts.test', { A: ['127.0.0.8'] });
dns.set('mx.sts.test', { A: ['127.0.0.8'] });
dns.set('_mta-sts.sts.test', { TXT: ['v=STSv1; id=1'] });
dns.set('mta-sts.sts.test', { A: ['127.0.0.1'] });
dns.set('_smtp._tls.sts.test', rua('mailto:tls-reports@reports.test', `https://127.0.0.1:${webPort}/tlsrpt`));
// stsbad.test: testing; its MX's certificate is signed by no CA, which the report says (delivered all the same).
dns.set('stsbad.test', { MX: [{ preference: 10, exchange: 'mx.stsbad.test' }] });
dns.set('mx.stsbad.test', { A: ['127.0.0.9'] });
dns.set('_mta-sts.stsbad.test', { TXT: ['v=STSv1; id=1'] });
dns.set('mta-sts.stsbad.test', { A: ['127.0.0.1'] });
dns.set('_smtp._tls.stsbad.test', rua(`https://127.0.0.1:${webPort}/testing`));
// nocert.test: a policy announced, at a web server whose certificate is not for mta-sts.nocert.test.
dns.set('nocert.test', { MX: [{ preference: 10, exchange: 'mx.sts.test' }] });
dns.set('_mta-sts.nocert.test', { TXT: ['v=STSv1; id=1'] });
dns.set('mta-sts.nocert.test', { A: ['127.0.0.1'] });
dns.set('_smtp._tls.nocert.test', rua(`https://127.0.0.1:${webPort}/nocert`));
// DANE: a matching record, and one that matches nothing.
dns.signed.add('dane.test');
for (const [domain, records] of [
  ['ee.dane.test', [daneEe]],
  ['wrong.dane.test', [wrongEe]],
] as const) {
  dns.set(domain, { MX: [{ preference: 10, exchange: `mx.${domain}` }] });
  dns.set(`mx.${domain}`, { A: ['127.0.0.8'] });
  dns.set(tlsa(`mx.${domain}`), { TLSA: [...records] });
}
dns.set('_smtp._tls.wrong.dane.test', rua(`https://127.0.0.1:${webPort}/dane`));
// No policy and no TLS-RPT record.
dns.set('plain.test', { MX: [{ preference: 10, exchange: 'mx.plain.test' }] });
dns.set('mx.plain.test', { A: ['127.0.0.1'] });
// Where mail reports go.
dns.set('reports.test', { MX: [{ preference: 10, exchange: 'mx.reports.test' }] });
dns.set('mx.reports.test', { A: ['127.0.0.8'] });

const send = async (to: string) => {
  const res = await fetch(`${s.url}/api/v1/emails`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ from: 'a@example.com', to, subject: 's', text_body: 'b' }),
  });
  t.equal(res.status, 202);
};
const drain = () => s.daemon.scheduler.drain();

// RFC 8460 4.4's report, its required fields and their types.
const ajv = new Ajv2020.default({ strict: true });
const policySummary = {
  type: 'object',
  required: ['policy', 'summary'],
  properties: {
    policy: {
      type: 'object',
      required: ['policy-type', 'policy-domain'],
      properties: {
        'policy-type': { enum: ['sts', 'tlsa', 'no-policy-found'] },
        'policy-string': { type: 'array', items: { type: 'string' } },
        'policy-domain': { type: 'string', minLength: 1 },
        'mx-host': { type: 'array', items: { type: 'string' } },
      },
      additionalProperties: false,
    },
    summary: {
      type: 'object',
      required: ['total-successful-session-count', 'total-failure-session-count'],
      properties: {
        'total-successful-session-count': { type: 'integer', minimum: 0 },
        'total-failure-session-count': { type: 'integer', minimum: 0 },
      },
      additionalProperties: false,
    },
    'failure-details': {
      type: 'array',
      items: {
        type: 'object',
        required: ['result-type', 'failed-session-count'],
        properties: {
          'result-type': { enum: [...TLS_RESULT_TYPES] },
          'sending-mta-ip': { type: 'string' },
          'receiving-mx-hostname': { type: 'string' },
          'receiving-mx-helo': { type: 'string' },
          'receiving-ip': { type: 'string' },
          'failed-session-count': { type: 'integer', minimum: 1 },
          'additional-information': { type: 'string' },
          'failure-reason-code': { type: 'string' },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};
const validReport = ajv.compile({
  type: 'object',
  required: ['organization-name', 'date-range', 'contact-info', 'report-id', 'policies'],
  properties: {
    'organization-name': { type: 'string', minLength: 1 },
    'date-range': {
      type: 'object',
      required: ['start-datetime', 'end-datetime'],
      properties: {
        'start-datetime': { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$' },
        'end-datetime': { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$' },
      },
      additionalProperties: false,
    },
    'contact-info': { type: 'string', minLength: 1 },
    'report-id': { type: 'string', minLength: 1 },
    policies: { type: 'array', minItems: 1, items: policySummary },
  },
  additionalProperties: false,
});

t.test('a day of sessions under MTA-STS and DANE is counted per connection, and reported once', async (t) => {
  // One connection after the other: each delivery tries mx1.sts.test, mx2.sts.test, then mx.sts.test.
  await send('a@sts.test');
  await drain();
  await send('b@sts.test');
  await drain();
  await send('c@wrong.dane.test');
  await send('d@ee.dane.test');
  await send('e@plain.test');
  await drain();
  await send('f@wrong.dane.test');
  await send('g@stsbad.test');
  await send('h@nocert.test');
  await drain();
  t.equal(untrusted.received.filter((m) => m.to[0] === 'g@stsbad.test').length, 1, 'testing: delivered');
  t.equal(valid.received.filter((m) => m.to[0] === 'h@nocert.test').length, 1, 'no policy to be had: delivered');
  t.equal(valid.received.filter((m) => /@sts\.test/.test(m.to[0]!)).length, 2, 'sts.test: both delivered');
  t.equal(valid.received.filter((m) => m.to[0] === 'd@ee.dane.test').length, 1);
  t.equal(valid.received.filter((m) => /wrong\.dane\.test/.test(m.to[0]!)).length, 0, 'wrong.dane.test: deferred');

  // The next day, past the delay: the day's counters are in the store, and its reports go.
  clock.advance(86_400_000);
  const first = await s.daemon.tlsReports.run(day);
  t.same(first.sent.map((r) => r.domain).sort(), ['nocert.test', 'sts.test', 'stsbad.test', 'wrong.dane.test']);
  t.match(first.skipped, [
    { domain: 'ee.dane.test', why: 'no TLS-RPT record' },
    { domain: 'plain.test', why: 'no TLS-RPT record' },
  ]);
  t.same(first.failed, []);
  t.same((await s.daemon.tlsReports.run(day)).sent, [], 'a second run sends nothing again');

  const reports = new Map(
    posted.map((p) => [p.url, { type: p.type, report: JSON.parse(gunzipSync(p.body).toString()) as Json }]),
  );
  t.equal(posted.length, 4, 'one POST per https URI');
  const sts = reports.get('/tlsrpt')!;
  t.equal(sts.type, 'application/tlsrpt+gzip');
  t.ok(validReport(sts.report), JSON.stringify(validReport.errors));
  t.match(sts.report, {
    'organization-name': 'Posthaste Test',
    'contact-info': 'tls@example.com',
    'date-range': { 'start-datetime': `${day}T00:00:00Z`, 'end-datetime': `${day}T23:59:59Z` },
    'report-id': `${day.replace(/-/g, '.')}T00.00.00Z+sts.test@mx.test.posthaste`,
  });
  t.same(sts.report.policies, [
    {
      policy: {
        'policy-type': 'sts',
        'policy-string': ['version: STSv1', 'mode: enforce', 'mx: *.sts.test', 'max_age: 86400'],
        'policy-domain': 'sts.test',
        'mx-host': ['*.sts.test'],
      },
      // Two deliveries, each over mx.sts.test after mx1.sts.test's and mx2.sts.test's certificates failed.
      summary: { 'total-successful-session-count': 2, 'total-failure-session-count': 4 },
      'failure-details': [
        {
          'result-type': 'certificate-host-mismatch',
          'sending-mta-ip': '127.0.0.1',
          'receiving-mx-hostname': 'mx2.sts.test',
          'receiving-ip': '127.0.0.8',
          'failed-session-count': 2,
          'failure-reason-code': sts.report.policies[0]['failure-details'][0]['failure-reason-code'],
        },
        {
          'result-type': 'certificate-not-trusted',
          'sending-mta-ip': '127.0.0.1',
          'receiving-mx-hostname': 'mx1.sts.test',
          'receiving-ip': '127.0.0.9',
          'failed-session-count': 2,
          'failure-reason-code': 'STARTTLS: self-signed certificate',
        },
      ],
    },
  ]);
  t.match(sts.report.policies[0]['failure-details'][0]['failure-reason-code'], /altnames/);

  const dane = reports.get('/dane')!;
  t.ok(validReport(dane.report), JSON.stringify(validReport.errors));
  t.match(dane.report.policies, [
    {
      policy: { 'policy-type': 'tlsa', 'policy-domain': 'wrong.dane.test', 'mx-host': ['mx.wrong.dane.test'] },
      summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 2 },
      'failure-details': [
        {
          'result-type': 'validation-failure',
          'receiving-mx-hostname': 'mx.wrong.dane.test',
          'receiving-ip': '127.0.0.8',
          'failed-session-count': 2,
          'failure-reason-code': /matches none of the TLSA records/,
        },
      ],
    },
  ]);
  t.same(dane.report.policies[0].policy['policy-string'], [`3 1 1 ${wrongEe.certificate.toString('hex')}`]);

  const testing = reports.get('/testing')!;
  t.ok(validReport(testing.report), JSON.stringify(validReport.errors));
  t.match(testing.report.policies, [
    {
      policy: {
        'policy-type': 'sts',
        'policy-string': ['version: STSv1', 'mode: testing', 'mx: mx.stsbad.test', 'max_age: 86400'],
      },
      summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 1 },
      'failure-details': [
        {
          'result-type': 'certificate-not-trusted',
          'receiving-mx-hostname': 'mx.stsbad.test',
          'failed-session-count': 1,
        },
      ],
    },
  ]);
  const nocert = reports.get('/nocert')!;
  t.ok(validReport(nocert.report), JSON.stringify(validReport.errors));
  t.same(nocert.report.policies[0].policy, { 'policy-type': 'sts', 'policy-domain': 'nocert.test' });
  t.match(nocert.report.policies[0], {
    summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 1 },
    'failure-details': [
      {
        'result-type': 'sts-webpki-invalid',
        'receiving-mx-hostname': 'mx.sts.test',
        'receiving-ip': '127.0.0.8',
        'failure-reason-code': /altnames|mta-sts\.nocert\.test/,
      },
    ],
  });

  // The mail report: queued as example.com's mail, delivered to reports.test's MX, signed.
  await drain();
  const mails = valid.received.filter((m) => m.to[0] === 'tls-reports@reports.test');
  t.equal(mails.length, 1, 'one mail report, to the mailto URI');
  const raw = mails[0]!.data;
  const parsed = await simpleParser(raw);
  t.equal(parsed.headers.get('tls-report-domain'), 'sts.test');
  t.equal(parsed.headers.get('tls-report-submitter'), 'mx.test.posthaste');
  t.equal(
    parsed.subject,
    `Report Domain: sts.test Submitter: mx.test.posthaste Report-ID: <${sts.report['report-id']}>`,
  );
  t.match(raw.toString(), /\r\nContent-Type: multipart\/report; report-type="tlsrpt";/);
  t.equal(parsed.attachments.length, 1);
  const attachment = parsed.attachments[0]!;
  t.equal(attachment.contentType, 'application/tlsrpt+gzip');
  t.equal(
    attachment.filename,
    `mx.test.posthaste!sts.test!${day0 / 1000 - 9 * 3600}!${day0 / 1000 - 9 * 3600 + 86_399}!${day.replace(/-/g, '')}.json.gz`,
  );
  t.same(JSON.parse(gunzipSync(attachment.content).toString()), sts.report, 'the same report as POSTed');
  const resolver = new Resolver();
  resolver.setServers([dns.server]);
  const verified = await dkimVerify(raw, {
    resolver: async (name: string, type: string) => (type === 'TXT' ? resolver.resolveTxt(name) : []),
  } as never);
  t.same(
    verified.results.map((r: Json) => [r.status.result, r.signingDomain]),
    [['pass', 'example.com']],
    'DKIM-signed with example.com key',
  );
  const signed = /^DKIM-Signature:[\s\S]*?\sh=([^;]+);/m
    .exec(raw.toString())![1]!
    .replace(/\s+/g, '')
    .toLowerCase()
    .split(':');
  t.ok(signed.includes('tls-report-domain') && signed.includes('tls-report-submitter'), 'the report fields are signed');
});

t.test("the job sends the previous day's reports once tlsrpt.delay has passed after midnight", async (t) => {
  // Sessions of the next day (the clock was moved a day on): retries, and the mail report's own.
  await send('i@wrong.dane.test');
  await drain();
  const next = utcDay(clock.now());
  clock.set(Date.parse(`${next}T00:00:00Z`) + 86_400_000 + 5 * 60_000);
  const before = posted.length;
  await s.daemon.tlsReports.due();
  t.equal(posted.length, before, 'midnight + 5 min: not yet (tlsrpt.delay is 15 min)');
  clock.advance(11 * 60_000);
  await s.daemon.tlsReports.due();
  t.same(
    posted.slice(before).map((p) => p.url),
    ['/dane'],
    'midnight + 16 min: the previous day sent',
  );
  const report = JSON.parse(gunzipSync(posted.at(-1)!.body).toString()) as Json;
  t.equal(report['date-range']['start-datetime'], `${next}T00:00:00Z`);
  t.ok(report.policies[0].summary['total-failure-session-count'] >= 1);
  await s.daemon.tlsReports.due();
  t.equal(posted.length, before + 1, 'and only once');
});

t.test('tlsrpt show prints what was sent, and what would be', async (t) => {
  const shown = await runCli(['--config', s.configPath, '--json', 'tlsrpt', 'show', '--date', day]);
  t.equal(shown.code, 0, shown.stderr);
  const all = JSON.parse(shown.stdout) as Json[];
  t.same(
    all.map((r) => [r.domain, r.sent?.sent_at !== undefined && r.sent !== null]),
    [
      ['ee.dane.test', false],
      ['nocert.test', true],
      ['plain.test', false],
      ['sts.test', true],
      ['stsbad.test', true],
      ['wrong.dane.test', true],
    ],
  );
  t.same(all.find((r) => r.domain === 'plain.test').rua, null, 'no TLS-RPT record: nothing sent');
  const one = await runCli(['--config', s.configPath, 'tlsrpt', 'show', '--date', day, '--domain', 'ee.dane.test']);
  t.match(one.stdout, /ee\.dane\.test: no TLS-RPT record: nothing is sent; not sent/);
  t.match(one.stdout, /"total-successful-session-count": 1/);
  const bad = await runCli(['--config', s.configPath, 'tlsrpt', 'show', '--date', '2026-02-30']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /--date: expected a day as YYYY-MM-DD/);
});
