// DKIM key rotation through the CLI: a message signed before the rotation verifies against the
// old selector's record, one signed after the switch against the new one; signing switches only
// when `domains verify` finds the new record, and `domains show` names both selectors.

import { Resolver } from 'node:dns/promises';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import t from 'tap';
import { zoneStrings } from '../../support/dns-server.js';
import { sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import type { Json } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const s = await startMailEnv({ mxDomains: ['rcpt.test'], domains: [] });
const { dns, mx, key } = s;
const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);

/** Publishes records as the CLI lists them, those of the given purposes: their value as a zone file would serve it, string by string. */
function publish(records: Json[], purposes: string[]): void {
  for (const r of records)
    if (r.type === 'TXT' && purposes.includes(r.purpose)) dns.set(r.name, { TXT: [zoneStrings(r.value)] });
}

async function sendAndDeliver(to: string): Promise<Buffer> {
  await sendEmail(s.url, key, { from: 'news@rotate.example', to, subject: 'Hello', text_body: 'Signed.' });
  await s.daemon.scheduler.drain();
  const got = mx.received.find((m) => m.to[0] === to);
  if (!got) throw new Error(`${to} not delivered`);
  return got.data;
}

const resolver = new Resolver();
resolver.setServers([dns.server]);
const verify = async (raw: Buffer) =>
  (
    await dkimVerify(raw, {
      resolver: async (name: string, type: string) => (type === 'TXT' ? resolver.resolveTxt(name) : []),
    } as never)
  ).results.map((r: Json) => [r.status.result, r.signingDomain, r.selector]);

t.test('rotate, publish, verify, switch; each message verifies against the DNS it was signed for', async (t) => {
  const added = json<Json>(await cli('domains', 'add', 'rotate.example', '--json'));
  publish(added.dns_records, ['verification', 'dkim']);
  t.equal((await cli('domains', 'verify', 'rotate.example')).code, 0);

  const before = await sendAndDeliver('before@rcpt.test');
  t.same(await verify(before), [['pass', 'rotate.example', 'posthaste']], 'signed with the first key');

  const rotated = await cli('domains', 'rotate-dkim', 'rotate.example');
  t.equal(rotated.code, 0, rotated.stderr);
  const selector = /under selector (\S+)\./.exec(rotated.stdout)?.[1];
  t.match(selector, /^posthaste\d{8}$/, 'a new selector named by the date');
  t.match(
    rotated.stdout,
    new RegExp(
      `${selector}\\._domainkey\\.rotate\\.example TXT "v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{237}" "[A-Za-z0-9+/=]+"\n`,
    ),
    'the record to publish, in strings of at most 255',
  );
  t.match(rotated.stdout, /keep the record of posthaste for 7 days/, 'the grace period is stated');

  const shown = json<Json>(await cli('domains', 'show', 'rotate.example', '--json'));
  t.same(shown.dkim, { signing: 'posthaste', next: selector, previous: null }, 'show: both selectors');
  t.same(
    shown.dns_records.filter((r: Json) => r.purpose.startsWith('dkim')).map((r: Json) => r.purpose),
    ['dkim', 'dkim_next'],
  );

  // Not published yet: verify leaves signing where it is (and the domain verified).
  const early = json<Json>(await cli('domains', 'verify', 'rotate.example', '--json'));
  t.equal(early.verified, true);
  t.equal(early.dkim_switched_to, null);
  const still = await sendAndDeliver('still@rcpt.test');
  t.same(
    await verify(still),
    [['pass', 'rotate.example', 'posthaste']],
    'still the first key before the record is found',
  );

  publish(shown.dns_records, ['dkim_next']);
  const switched = await cli('domains', 'verify', 'rotate.example');
  t.equal(switched.code, 0);
  t.match(
    switched.stdout,
    new RegExp(`signing now with selector ${selector}; keep the record of posthaste until \\d{4}-`),
  );

  const after = await sendAndDeliver('after@rcpt.test');
  t.same(await verify(after), [['pass', 'rotate.example', selector]], 'signed with the new key after the switch');

  const show2 = json<Json>(await cli('domains', 'show', 'rotate.example', '--json'));
  t.equal(show2.dkim.signing, selector);
  t.equal(show2.dkim.next, null);
  t.equal(show2.dkim.previous.selector, 'posthaste');
  t.equal(
    Date.parse(show2.dkim.previous.remove_record_after) - Date.parse(show2.dkim.previous.switched_at),
    7 * 86_400_000,
  );
  t.same(
    show2.dns_records
      .filter((r: Json) => r.purpose.startsWith('dkim'))
      .map((r: Json) => [r.purpose, r.name.split('.')[0]]),
    [
      ['dkim', selector],
      ['dkim_previous', 'posthaste'],
    ],
    'the old record is listed for the grace period',
  );

  // Once the old record is gone, mail signed before the switch no longer verifies, mail after does.
  dns.set('posthaste._domainkey.rotate.example', { TXT: [] });
  t.notSame((await verify(before))[0]?.[0], 'pass', 'the old signature needed the old record');
  t.same(await verify(after), [['pass', 'rotate.example', selector]]);

  // A second rotation the same day gets another selector.
  const again = await cli('domains', 'rotate-dkim', 'rotate.example');
  t.match(/under selector (\S+)\./.exec(again.stdout)?.[1], /^posthaste\d{8}a$/);
});
