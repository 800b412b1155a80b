import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { spawnDaemon } from '../../support/daemon-process.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';
import { waitFor } from '../../support/wait.js';
import { sendEmail } from '../helpers/api.js';
import { makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import type { Json } from '../helpers/http.js';

// The daemon's delivery log line, read from its JSON log as an operator's jq would: what Postfix's
// relay=, delay=, dsn= and TLS lines say (docs/operations.md, "Logs").

const dns = await new TestDnsServer().start();
const mx = await new TestMx('127.0.0.1').start(); // STARTTLS with smtp-server's own self-signed certificate
t.teardown(async () => {
  await Promise.all([dns.stop(), mx.stop()]);
});
dns.set('good.test', { MX: [{ preference: 10, exchange: 'mx.good.test' }] });
dns.set('mx.good.test', { A: ['127.0.0.1'] });
mx.script = (rcpt) => {
  if (rcpt.startsWith('nobody'))
    return { rcpt: [550, '5.1.1 <' + rcpt + '>: Recipient address rejected: User unknown'] };
  if (rcpt.startsWith('later')) return { rcpt: [451, 'Try again later'] }; // no enhanced code
  return undefined;
};

const dir = tempDir();
t.teardown(dir.remove);
const configPath = writeTestConfig(dir.path, `[outbound]\nport = ${mx.port}\n[log]\nlevel = "info"\n`, dns.server);
const setup = await openTestStore(loadConfig({ path: configPath, env: {} }));
const key = await makeKey(setup);
await makeDomain(setup, 'example.com');
await setup.admin.close();

t.test('one JSON line per recipient with relay, delays, DSN status and TLS', async (t) => {
  const d = await spawnDaemon(configPath);
  t.teardown(() => {
    if (d.child.exitCode === null) d.child.kill('SIGKILL');
  });
  const id = await sendEmail(d.apiUrl, key, {
    from: 'a@example.com',
    to: ['ok@good.test', 'nobody@good.test', 'later@good.test', 'x@nx.test'],
    subject: 's',
    text_body: 'b',
  });
  const lines = await waitFor(
    'four delivery lines',
    () => {
      const found = d
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{') && l.includes('"delivery attempt"'))
        .map((l) => JSON.parse(l) as Json);
      return found.length >= 4 && found;
    },
    20_000,
  );
  const of = (rcpt: string) => lines.find((l: Json) => l.recipient === rcpt);
  const relay = `mx.good.test[127.0.0.1]:${mx.port}`;
  const ok = of('ok@good.test');
  t.match(ok, {
    level: 30,
    msg: 'delivery attempt',
    message_id: id,
    outcome: 'delivered',
    attempt: 1,
    relay,
    relay_host: 'mx.good.test',
    relay_address: '127.0.0.1',
    dsn: /^2\.0\.0$/,
    code: 250,
    reply: /queued as TEST/,
    tls: true,
    tls_version: /^TLSv1\.[23]$/,
    tls_cipher: /^(TLS_|ECDHE)/,
    tls_verified: false,
  });
  t.type(ok.delay, 'number');
  t.ok(ok.delay >= ok.attempt_delay && ok.attempt_delay >= 0, 'delay since acceptance, at least the attempt');
  t.match(of('nobody@good.test'), {
    outcome: 'bounced',
    relay,
    dsn: '5.1.1',
    code: 550,
    classification: 'unknown_recipient',
    tls: true,
  });
  t.match(
    of('later@good.test'),
    { outcome: 'deferred', relay, dsn: '4.0.0', code: 451 },
    'a reply without an enhanced code: its class',
  );
  const none = of('x@nx.test');
  t.match(none, { outcome: 'bounced', relay: 'none', dsn: '5.1.2', code: 550, reply: /NXDOMAIN/ });
  t.notOk('tls' in none || 'relay_host' in none, 'no connection: no TLS fields');
  t.notMatch(d.output(), key, 'the API key is in no log line');
});
