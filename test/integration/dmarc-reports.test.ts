import { gzipSync } from 'node:zlib';
import { zipSync } from 'fflate';
import t from 'tap';
import { json, runCli } from '../helpers/cli.js';
import { RECORDS, reportMail, reportXml } from '../helpers/dmarc.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { RawSmtp } from '../helpers/smtp-client.js';

// DMARC aggregate reports mailed to smtp.dmarc_address over real SMTP: each kept once (a
// receiver's retry adds nothing), a report about a domain no customer holds kept apart, an
// unreadable one kept and counted without harm to the listener, and `posthaste dmarc show` sums
// them per day and source address with posthaste's own addresses (outbound.source_addresses)
// marked.

t.setTimeout(300_000);
const DMARC = 'dmarc@reports.test.posthaste';
const s = await startMailEnv({
  domains: ['acme.example'],
  outbound: 'source_addresses = ["192.0.2.10"]\n',
  daemon: { smtp: `dmarc_address = "${DMARC}"\n` },
});

async function inject(rcpt: string, raw: Buffer): Promise<string> {
  const c = await RawSmtp.connect(s.daemon.smtp.port);
  await c.cmd('EHLO mx.google.example');
  const r = await c.send('noreply-dmarc-support@google.com', [rcpt], raw);
  c.close();
  return `${r.rcpt[0]} / ${r.data}`;
}

const google = reportXml('google.com', 'noreply-dmarc-support@google.com', 'g-1', RECORDS);
const googleMail = reportMail(
  'noreply-dmarc-support@google.com',
  'google.com!acme.example!1795737600!1795823999.zip',
  'application/zip',
  Buffer.from(zipSync({ 'google.com!acme.example!1795737600!1795823999.xml': Buffer.from(google) })),
);
const outlook = reportXml('Enterprise Outlook', 'dmarcreport@microsoft.com', 'm-1', RECORDS.slice(0, 1), { ms: true });
const outlookMail = reportMail('dmarcreport@microsoft.com', 'x.xml.gz', 'application/gzip', gzipSync(outlook));
const foreign = reportMail(
  'noreply-dmarc-support@google.com',
  'r.xml',
  'text/xml',
  Buffer.from(google.replace('<domain>Acme.example</domain>', '<domain>nobody.example</domain>').replace('g-1', 'g-2')),
);
const damaged = reportMail('x@broken.example', 'r.xml.gz', 'application/gzip', gzipSync(google).subarray(0, 40));

t.test('report mails over SMTP, kept once each, summed by the CLI', async (t) => {
  for (const raw of [googleMail, outlookMail, googleMail, foreign, damaged])
    t.match(await inject(DMARC, raw), /^250 .* \/ 250 /, 'every report mail is answered 250');
  t.match(await inject('dmarc@elsewhere.example', googleMail), /^550 /, 'another address is not taken');
  t.same(await s.store.dmarc.counts(), { reports: 3, foreign: 1, unreadable: 1 });

  const r = await runCli(['--config', s.configPath, '--json', 'dmarc', 'show', 'acme.example', '--since', '3650d']);
  t.equal(r.code, 0, r.stderr);
  const summary = json<{ sources: Array<Record<string, unknown>>; ours_failing: number; others: number }>(r);
  const byIp = Object.fromEntries(summary.sources.map((x) => [x.source_ip, x]));
  // RECORDS: 192.0.2.10 sent 1200 aligned (google) + 1200 (outlook); 2001:db8::25 3 failing; 198.51.100.7 41 DKIM-aligned.
  t.match(byIp['192.0.2.10'], {
    messages: 2400,
    dmarc_pass: 2400,
    ours: true,
    reporters: ['Enterprise Outlook', 'google.com'],
  });
  t.match(byIp['2001:db8::25'], { messages: 3, dmarc_pass: 0, ours: false });
  t.match(byIp['198.51.100.7'], { messages: 41, dkim_aligned: 41, spf_aligned: 0, ours: false });
  t.equal(summary.ours_failing, 0);
  t.equal(summary.others, 44);

  const human = await runCli(['--config', s.configPath, 'dmarc', 'show', 'acme.example', '--since', '3650d']);
  t.match(human.stdout, /Mail from addresses that are not ours: 44/);
  const bad = await runCli(['--config', s.configPath, 'dmarc', 'show', 'acme.example', '--since', 'a week']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /--since: expected a duration/);
});
