import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { dkimValue, dnsRecords, serverRecords, TXT_STRING_MAX, zoneTxt } from '../../../src/domain/dns-records.js';
import { zoneStrings } from '../../../support/dns-server.js';

const server = {
  hostname: 'mx.example.net',
  returnPathDomain: 'bounces.example.net',
  returnPathLabel: 'bounces',
  spfSources: [],
};
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
  t.same(mx(true), [{ type: 'MX', name: 'shop.example', value: '10 mx.example.net', purpose: 'inbound' }]);
  t.same(mx(false), []);
});

t.test(
  "a domain's return path: a CNAME bounces.<domain> to the return path domain, or its MX and SPF instead",
  async (t) => {
    const rp = dnsRecords(keys, { ...server, returnPathLabel: 'rp' }).find((r) => r.purpose === 'return_path');
    t.same(rp, {
      type: 'CNAME',
      name: 'rp.shop.example',
      value: 'bounces.example.net.',
      purpose: 'return_path',
      instead: [
        { type: 'MX', name: 'rp.shop.example', value: '10 mx.example.net', purpose: 'return_path' },
        {
          type: 'TXT',
          name: 'rp.shop.example',
          value: '"v=spf1 a:mx.example.net ~all"',
          text: 'v=spf1 a:mx.example.net ~all',
          purpose: 'return_path',
        },
      ],
    });
  },
);

t.test("the server's records: the return path domain's MX, and one SPF record with every source address", async (t) => {
  const spfSources = ['ip4:192.0.2.1', 'ip4:192.0.2.2', 'ip6:2001:db8::1'];
  t.same(serverRecords({ ...server, spfSources }), [
    { type: 'MX', name: 'bounces.example.net', value: '10 mx.example.net', purpose: 'server_mx' },
    {
      type: 'TXT',
      name: 'bounces.example.net',
      value: '"v=spf1 ip4:192.0.2.1 ip4:192.0.2.2 ip6:2001:db8::1 ~all"',
      text: 'v=spf1 ip4:192.0.2.1 ip4:192.0.2.2 ip6:2001:db8::1 ~all',
      purpose: 'server_spf',
    },
  ]);
  t.equal(
    serverRecords(server)[1]!.text,
    'v=spf1 a:mx.example.net ~all',
    'no addresses configured: the server by name',
  );
});
