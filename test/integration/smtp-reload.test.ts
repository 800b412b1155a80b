// SIGHUP and the inbound listener's TLS: a reload that adds smtp.tls.cert/key makes the next
// connection offer STARTTLS with that certificate; one that removes them stops offering it.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startTestServer } from '../helpers/env.js';
import { RawSmtp } from '../helpers/smtp-client.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../../test/fixtures/tls/${name}`, import.meta.url));
const s = await startTestServer();
t.teardown(() => s.close());
const ehlo = async () => {
  const c = await RawSmtp.connect(s.daemon.smtp.port);
  return { c, reply: await c.cmd('EHLO client.test') };
};

t.test('STARTTLS follows the configuration a reload hands over', async (t) => {
  const plain = await ehlo();
  t.notMatch(plain.reply, /STARTTLS/, 'no certificate: STARTTLS is not offered');
  t.match(await plain.c.cmd('STARTTLS'), /^5\d\d/, 'nor accepted');
  plain.c.close();

  const withCert = structuredClone(s.config);
  withCert.smtp['tls.cert'] = fixture('server.pem');
  withCert.smtp['tls.key'] = fixture('server-key.pem');
  t.same(s.daemon.reload(withCert).applied, ['smtp.tls.cert', 'smtp.tls.key']);
  const tlsOn = await ehlo();
  t.match(tlsOn.reply, /250[- ]STARTTLS/, 'offered after the reload');
  const secure = await tlsOn.c.startTls({ ca: readFileSync(fixture('ca.pem')), servername: 'localhost' });
  t.ok(secure.authorized, 'with the configured certificate (verified against the test CA)');
  t.notMatch(await tlsOn.c.cmd('EHLO client.test'), /STARTTLS/, 'and not again inside TLS');
  tlsOn.c.close();

  const without = structuredClone(s.config);
  without.smtp['tls.cert'] = '';
  without.smtp['tls.key'] = '';
  t.same(s.daemon.reload(without).applied, ['smtp.tls.cert', 'smtp.tls.key']);
  const off = await ehlo();
  t.notMatch(off.reply, /STARTTLS/, 'removed: no longer offered');
  off.c.close();
});
