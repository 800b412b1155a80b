// SIGHUP and the inbound listener's TLS: a reload that adds smtp.tls.cert/key makes the next
// connection offer STARTTLS with that certificate; one that removes them stops offering it. The
// submission listeners take a new certificate the same way.

import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startTestServer } from '../helpers/env.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { submissionToml } from '../helpers/submission.js';

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

t.test(
  "the submission listeners' certificate follows a reload: the next handshake on each uses the new one",
  async (t) => {
    const sub = await startTestServer(submissionToml());
    t.teardown(() => sub.close());
    const { submission } = sub.daemon;
    /** The certificate's CN each listener presents now: STARTTLS on submission.listen, TLS from the start on listen_tls. */
    const presented = async () => {
      const c = await RawSmtp.connect(submission['submission.listen']!.port);
      await c.cmd('EHLO client.test');
      const starttls = (await c.startTls({ rejectUnauthorized: false, servername: 'localhost' })).getPeerCertificate()
        .subject.CN;
      c.close();
      const socket = tls.connect({
        port: submission['submission.listen_tls']!.port,
        host: '127.0.0.1',
        rejectUnauthorized: false,
        servername: 'localhost',
      });
      await once(socket, 'secureConnect');
      const implicit = socket.getPeerCertificate().subject.CN;
      socket.destroy();
      return [starttls, implicit];
    };
    t.same(await presented(), ['mx.sts.test', 'mx.sts.test'], 'the configured certificate on both');
    const next = structuredClone(sub.config);
    next.submission['tls.cert'] = fixture('self-signed.pem');
    next.submission['tls.key'] = fixture('self-signed-key.pem');
    t.same(sub.daemon.reload(next).applied, ['submission.tls.cert', 'submission.tls.key']);
    t.same(await presented(), ['self-signed.test', 'self-signed.test'], 'the new one on both after the reload');
  },
);
