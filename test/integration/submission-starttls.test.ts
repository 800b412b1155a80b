import { readFileSync } from 'node:fs';
import t from 'tap';
import { fullGrant } from '../../src/domain/key-scopes.js';
import { customerId, makeDomain, startTestServer, type TestServer } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { queuedAs, runProgram, submissionToml, swaks, swaksAvailable } from '../helpers/submission.js';

// AUTH before STARTTLS on the submission listener (docs/submission.md, TLS): not offered by EHLO,
// and answered `530 5.7.0 Must issue a STARTTLS command first` (RFC 3207 4, RFC 4954 4) without
// reading any credentials; MAIL before AUTH `530 5.7.0 Authentication required`; after STARTTLS
// AUTH PLAIN and LOGIN work. The listener is on 127.0.0.1 without
// allow_plaintext_auth_on_loopback, so that loopback clients are treated as any other; the last
// test turns the setting on.

const s: TestServer = await startTestServer(submissionToml(), { manualDelivery: true });
t.teardown(() => s.close());
const created = await s.store.keys.create({
  grant: fullGrant(),
  customerId: await customerId(s.store),
  kind: 'production',
  name: 'app',
  now: Date.now(),
});
const key = created.key;
await makeDomain(s.store, 'example.com');
const port = s.daemon.submission['submission.listen']!.port;
const ca = fixturePath('tls/ca.pem');
const plain = (k: string) => Buffer.from(`\0posthaste\0${k}`).toString('base64');
const STARTTLS_FIRST = /^530 5\.7\.0 Must issue a STARTTLS command first/;

t.test('a raw client: AUTH before STARTTLS is 530 5.7.0, credentials unread; MAIL before AUTH 530 5.7.0', async (t) => {
  const c = await RawSmtp.connect(port);
  const ehlo = await c.cmd('EHLO app.test');
  t.notMatch(ehlo, /AUTH/, 'AUTH is not offered before TLS');
  t.match(ehlo, /STARTTLS/);
  t.match(await c.cmd(`AUTH PLAIN ${plain(key)}`), STARTTLS_FIRST, 'AUTH PLAIN with its initial response');
  t.match(await c.cmd('AUTH LOGIN'), STARTTLS_FIRST, 'AUTH LOGIN: refused at once, no 334 asking for the key');
  t.match(await c.cmd('AUTH PLAIN'), STARTTLS_FIRST, 'AUTH PLAIN without a response: no 334 either');
  t.match(await c.cmd('MAIL FROM:<a@app>'), /^530 5\.7\.0 Authentication required/, 'MAIL before AUTH');
  t.match(await c.cmd('NOOP'), /^250 /, 'the connection goes on');
  await c.startTls({ ca: readFileSync(ca), servername: 'localhost' });
  t.match(await c.cmd('EHLO app.test'), /AUTH PLAIN LOGIN/, 'AUTH offered under TLS');
  t.match(await c.cmd('MAIL FROM:<a@app>'), /^530 5\.7\.0 Authentication required/, 'MAIL before AUTH under TLS');
  t.match(await c.cmd('AUTH LOGIN'), /^334 /, 'AUTH LOGIN under TLS asks for the user name');
  t.match(await c.cmd(Buffer.from('posthaste').toString('base64')), /^334 /);
  t.match(await c.cmd(Buffer.from(key).toString('base64')), /^235 /);
  t.match(await c.cmd('MAIL FROM:<a@app>'), /^250 /);
  c.close();
});

t.test(
  "Python's smtplib: login() in the clear sends nothing, AUTH sent anyway is 530 5.7.0, after starttls() both mechanisms work",
  async (t) => {
    const py = `
import base64, smtplib, ssl, sys
port, key, ca = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with smtplib.SMTP('127.0.0.1', port) as c:
    c.ehlo('app.test')
    try:
        c.login('posthaste', key)
        print('login: accepted in the clear')
    except smtplib.SMTPNotSupportedError as e:
        print('login: not offered')
    for mech in ('PLAIN ' + base64.b64encode(('\\0posthaste\\0' + key).encode()).decode(), 'LOGIN'):
        code, text = c.docmd('AUTH', mech)
        print('AUTH %s: %d %s' % (mech.split()[0], code, text.decode()))
    code, text = c.docmd('MAIL', 'FROM:<a@app>')
    print('MAIL: %d %s' % (code, text.decode()))
for mech in ('PLAIN', 'LOGIN'):
    with smtplib.SMTP('127.0.0.1', port) as c:
        c.starttls(context=ssl.create_default_context(cafile=ca))
        c.ehlo('app.test')
        c.user, c.password = 'posthaste', key
        code, text = c.auth(mech, getattr(c, 'auth_' + mech.lower()), initial_response_ok=(mech == 'PLAIN'))
        print('TLS %s: %d' % (mech, code))
        c.sendmail('a@app', ['x@good.test'], 'From: shop@example.com\\r\\nTo: x@good.test\\r\\nSubject: tls ' + mech + '\\r\\n\\r\\nb\\r\\n')
        print('sent', mech)
`;
    const r = await runProgram('/usr/bin/python3', ['-c', py, String(port), key, ca]);
    t.equal(r.code, 0, r.out);
    t.match(r.out, /^login: not offered$/m, 'smtplib sees no AUTH before TLS, so never sends the key');
    t.match(r.out, /^AUTH PLAIN: 530 5\.7\.0 Must issue a STARTTLS command first/m);
    t.match(r.out, /^AUTH LOGIN: 530 5\.7\.0 Must issue a STARTTLS command first/m);
    t.match(r.out, /^MAIL: 530 5\.7\.0 Authentication required/m);
    t.match(r.out, /^TLS PLAIN: 235$/m);
    t.match(r.out, /^TLS LOGIN: 235$/m);
    t.match(r.out, /^sent LOGIN$/m);
  },
);

const skipSwaks = swaksAvailable();
t.test(
  'swaks: AUTH PLAIN and LOGIN not sent in the clear (not offered); with --tls they work',
  { skip: skipSwaks ?? false },
  async (t) => {
    for (const mech of ['PLAIN', 'LOGIN']) {
      const args = ['--auth', mech, '--auth-user', 'posthaste', '--auth-password', key, '--from', 'a@app'];
      const mail = ['--to', 'x@good.test', '--header', 'From: shop@example.com', '--header', `Subject: swaks ${mech}`];
      // swaks sends AUTH only where EHLO offers it: in the clear it stops there, the key unsent.
      const clear = await swaks(port, [...args, ...mail]);
      t.not(clear.code, 0, `${mech} in the clear is not sent`);
      t.notMatch(clear.out, /^ -> AUTH /m, 'swaks did not send AUTH, not being offered it');
      const tls = await swaks(port, ['--tls', '--tls-ca-path', ca, ...args, ...mail]);
      t.equal(tls.code, 0, tls.out);
      t.ok(queuedAs(tls.out), `${mech} after STARTTLS: queued`);
    }
  },
);

t.test('allow_plaintext_auth_on_loopback = true: AUTH in the clear from loopback is taken', async (t) => {
  const l = await startTestServer(submissionToml('allow_plaintext_auth_on_loopback = true\n'), {
    manualDelivery: true,
  });
  t.teardown(() => l.close());
  const k = (
    await l.store.keys.create({
      grant: fullGrant(),
      customerId: await customerId(l.store),
      kind: 'production',
      name: 'a',
      now: Date.now(),
    })
  ).key;
  const c = await RawSmtp.connect(l.daemon.submission['submission.listen']!.port);
  t.match(await c.cmd('EHLO app.test'), /AUTH PLAIN LOGIN/);
  t.match(await c.cmd(`AUTH PLAIN ${plain(k)}`), /^235 /);
  c.close();
});
