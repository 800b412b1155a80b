// The return path on the sending domain (docs/delivery.md, "Sending identities"): a receiver that
// checks SPF, DKIM and DMARC with a library that is not ours (mailauth), resolving through the
// loopback DNS server, finds SPF pass, DKIM pass and DMARC pass aligned on both once the domain's
// return-path CNAME is published and verified; before that, the envelope sender stays on the
// server's return path domain. A bounce to the domain's return path is read as any other.

import t from 'tap';
import { zoneStrings } from '../../support/dns-server.js';
import type { ReceivedMessage } from '../../support/mx-server.js';
import { getEmail, sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { fixture } from '../helpers/fixtures.js';
import type { Json } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { receiverVerdict } from '../helpers/receiver.js';
import { RawSmtp } from '../helpers/smtp-client.js';

const s = await startMailEnv({
  mxDomains: ['rcpt.test'],
  domains: [],
  outbound: 'source_addresses = ["127.0.0.1", "::1"]\n',
});
const { dns, mx, key } = s;
const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);

async function sendAndDeliver(to: string): Promise<{ id: string; got: ReceivedMessage }> {
  const id = await sendEmail(s.url, key, { from: 'Acme <news@acme.example>', to, subject: 'Hi', text_body: 'Signed.' });
  await s.daemon.scheduler.drain();
  const got = mx.received.find((m) => m.to[0] === to);
  if (!got) throw new Error(`${to} not delivered`);
  return { id, got };
}

t.test('SPF, DKIM and DMARC pass, aligned on both, once the return path CNAME holds', async (t) => {
  const added = json<Json>(await cli('domains', 'add', 'acme.example', '--json'));
  t.match(added.return_path, { host: 'bounces.acme.example', holds: false, envelope_domain: 'bounces.test.posthaste' });
  for (const r of added.dns_records)
    if (['verification', 'dkim', 'dmarc'].includes(r.purpose)) dns.set(r.name, { TXT: [zoneStrings(r.value)] });
  const server = json<Json>(await cli('dns', 'server', '--json'));
  t.same(
    server.records.map((r: Json) => [r.type, r.name, r.text ?? r.value]),
    [
      ['MX', 'bounces.test.posthaste', '10 mx.test.posthaste'],
      ['TXT', 'bounces.test.posthaste', 'v=spf1 ip4:127.0.0.1 ip6:::1 ~all'],
    ],
    "the server's records: one SPF record listing every source address",
  );
  dns.set('bounces.test.posthaste', {
    MX: [{ preference: 10, exchange: 'mx.test.posthaste' }],
    TXT: [server.records[1].text],
  });

  const verified = await cli('domains', 'verify', 'acme.example', '--json');
  t.equal(verified.code, 0, verified.stderr);
  t.match(json<Json>(verified).return_path, { holds: false });
  const shown = (await cli('domains', 'show', 'acme.example')).stdout;
  t.match(shown, /Return path: bounces\.acme\.example NOT found; .*envelope sender is on bounces\.test\.posthaste/);
  t.match(shown, /\[return_path\] bounces\.acme\.example CNAME bounces\.test\.posthaste\.\n/);

  const before = await sendAndDeliver('before@rcpt.test');
  t.match(before.got.from, /^bounces\+[0-9a-z]{20}@bounces\.test\.posthaste$/, 'not published: the server return path');
  t.match(await receiverVerdict(before.got, dns.server), {
    spf: 'pass',
    spfDomain: 'bounces.test.posthaste',
    dkim: [['pass', 'acme.example', 'acme.example']],
    dmarc: 'pass',
    alignedSpf: false,
    alignedDkim: 'acme.example',
  });

  dns.set('bounces.acme.example', { CNAME: 'bounces.test.posthaste.' });
  const again = await cli('domains', 'verify', 'acme.example', '--json');
  t.equal(again.code, 0, again.stderr);
  t.match(json<Json>(again).return_path, {
    host: 'bounces.acme.example',
    holds: true,
    envelope_domain: 'bounces.acme.example',
    lost: null,
  });
  t.match(json<Json>(await cli('domains', 'show', 'acme.example', '--json')).return_path, { holds: true });

  const after = await sendAndDeliver('after@rcpt.test');
  t.match(
    after.got.from,
    /^bounces\+[0-9a-z]{20}@bounces\.acme\.example$/,
    "the envelope sender on the domain's own host",
  );
  t.match(await receiverVerdict(after.got, dns.server), {
    spf: 'pass',
    spfDomain: 'bounces.acme.example',
    dkim: [['pass', 'acme.example', 'acme.example']],
    dmarc: 'pass',
    alignedSpf: 'bounces.acme.example',
    alignedDkim: 'acme.example',
  });

  // A bounce to the domain's return path: the token decides whose it is.
  const c = await RawSmtp.connect(s.daemon.smtp.port);
  await c.cmd('EHLO mx.rcpt.test');
  const dsn = Buffer.from(
    fixture('dsn/postfix.eml')
      .toString()
      .replaceAll('bounces+0000001k5c2y8qh3h0wz@bounces.test.posthaste', after.got.from)
      .replaceAll('<01jdsnfixture00000000000000@example.com>', `<${after.id}>`),
  );
  const forged = after.got.from.replace(/\+[0-9a-z]{4}/, '+zzzz');
  const r = await c.send('', [forged, after.got.from], dsn);
  c.close();
  t.match(r.rcpt[0], /^550 /, 'a token posthaste did not make is refused on a domain return path');
  t.match(`${r.rcpt[1]} / ${r.data}`, /^250 .*\/ 250/);
  const events = (await getEmail(s.url, key, after.id)).events.map((e: Json) => e.type);
  t.same(events, ['email.delivered', 'email.bounced', 'recipient.suppressed'], 'read as a bounce of that message');

  // The CNAME is taken away: the next verification says so, and mail goes back to the server's return path.
  dns.zone.delete('bounces.acme.example');
  t.match(json<Json>(await cli('domains', 'verify', 'acme.example', '--json')).return_path, { holds: false });
  const later = await sendAndDeliver('later@rcpt.test');
  t.match(later.got.from, /@bounces\.test\.posthaste$/);
});

t.test("the return path's MX and SPF published in place of the CNAME hold as well", async (t) => {
  const added = json<Json>(await cli('domains', 'add', 'alt.example', '--json'));
  const rp = added.dns_records.find((r: Json) => r.purpose === 'return_path');
  t.same(
    rp.instead.map((r: Json) => [r.type, r.name, r.text ?? r.value]),
    [
      ['MX', 'bounces.alt.example', '10 mx.test.posthaste'],
      ['TXT', 'bounces.alt.example', 'v=spf1 ip4:127.0.0.1 ip6:::1 ~all'],
    ],
  );
  for (const r of added.dns_records)
    if (['verification', 'dkim'].includes(r.purpose)) dns.set(r.name, { TXT: [zoneStrings(r.value)] });
  dns.set('bounces.alt.example', { MX: [{ preference: 10, exchange: 'mx.test.posthaste' }] });
  t.match(
    json<Json>(await cli('domains', 'verify', 'alt.example', '--json')).return_path,
    { holds: false },
    'the MX alone is not enough',
  );
  dns.set('bounces.alt.example', { TXT: [rp.instead[1].text] });
  t.match(json<Json>(await cli('domains', 'verify', 'alt.example', '--json')).return_path, {
    holds: true,
    envelope_domain: 'bounces.alt.example',
  });
});
