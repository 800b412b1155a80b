import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { dkimValue, dnsRecords, TXT_STRING_MAX, zoneTxt } from '../../../src/domain/dns-records.js';
import { zoneStrings } from '../../../support/dns-server.js';

const server = { hostname: 'mx.example.net', returnPathDomain: 'bounces.example.net' };
const publicKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .publicKey.export({ type: 'spki', format: 'der' })
  .toString('base64');
const keys = { name: 'shop.example', verificationToken: 'tok123', dkimSelector: 'posthaste', dkimPublicKey: publicKey };

t.test('TXT data in the zone-file form: quoted strings of at most 255 characters that join to the text', async (t) => {
  for (const text of [
    '',
    'v=DMARC1; p=none',
    'x'.repeat(255),
    'x'.repeat(256),
    'y'.repeat(1000),
    dkimValue(publicKey),
    'a "quoted" \\ text'.repeat(30),
  ]) {
    const value = zoneTxt(text);
    const strings = zoneStrings(value);
    t.equal(strings.join(''), text, `${text.length} characters join back`);
    t.ok(
      strings.every((s) => s.length <= TXT_STRING_MAX),
      'no string over 255',
    );
    t.equal(strings.length, Math.max(1, Math.ceil(text.length / TXT_STRING_MAX)), 'as few strings as fit');
  }
  t.equal(zoneTxt('v=spf1 a:mx.example.net ~all'), '"v=spf1 a:mx.example.net ~all"');
  t.equal(zoneTxt('say "hi" \\o/'), '"say \\"hi\\" \\\\o/"', 'quotes and backslashes escaped as BIND reads them');
});

t.test('the DKIM record of a 2048-bit key is given as two strings, BIND-ready', async (t) => {
  const dkim = dnsRecords(keys, server).find((r) => r.purpose === 'dkim')!;
  t.equal(dkim.text, `v=DKIM1; k=rsa; p=${publicKey}`);
  t.ok(dkim.text!.length > 400, 'over 400 characters');
  t.match(dkim.value, /^"v=DKIM1; k=rsa; p=[A-Za-z0-9+/]{237}" "[A-Za-z0-9+/=]+"$/);
});

t.test("a receiving domain's own MX points at server.hostname; a sending-only domain has none", async (t) => {
  const mx = (receiving: boolean) => dnsRecords({ ...keys, receiving }, server).filter((r) => r.type === 'MX');
  t.same(mx(true), [
    { type: 'MX', name: 'bounces.example.net', value: '10 mx.example.net', purpose: 'return_path' },
    { type: 'MX', name: 'shop.example', value: '10 mx.example.net', purpose: 'inbound' },
  ]);
  t.same(
    mx(false).map((r) => r.purpose),
    ['return_path'],
  );
});
