import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startDaemon } from '../../src/main.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';
import { freePort, startPgCluster } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';
import { runCli } from '../helpers/cli.js';
import { makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { testSql } from '../helpers/sql.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// PostgreSQL going away, against a real server of the test's own (stopped and started again):
// a daemon that cannot reach it does not start, and says where it looked without the password; a
// daemon whose database goes away while it serves refuses with 503 and 451 rather than lying,
// loses nothing it acknowledged, and goes on by itself when the database is back.

t.test('a daemon whose store cannot be reached does not start, and names the URL without its password', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const port = await freePort(); // nothing listens there
  const config = writeTestConfig(
    dir.path,
    '',
    undefined,
    '',
    undefined,
    `postgresql://posthaste:hunter2secret@127.0.0.1:${port}/posthaste`,
  );
  const r = await runCli(['--config', config, 'serve']);
  t.not(r.code, 0, 'exits non-zero');
  t.match(
    r.stderr,
    new RegExp(
      `cannot use the store at postgresql://posthaste:\\*\\*\\*@127\\.0\\.0\\.1:${port}/posthaste \\(store\\.url\\)`,
    ),
    'names the store, password hidden',
  );
  t.notMatch(r.stderr + r.stdout, /hunter2secret/, 'the password is never printed');
  t.notMatch(r.stderr, /^\s+at /m, 'one line, not a stack');
});

t.test(
  'the database stops while the daemon serves: 503 and 451, nothing acknowledged is lost, and it goes on by itself',
  async (t) => {
    const pg = await startPgCluster();
    t.teardown(() => pg.remove());
    const dns = await new TestDnsServer().start();
    const mx = await new TestMx('127.0.0.1').start();
    const rx = await new WebhookReceiver().start();
    t.teardown(async () => {
      await Promise.all([dns.stop(), mx.stop(), rx.stop()]);
    });
    dns.set('example.net', { MX: [{ preference: 10, exchange: 'mx.example.net' }] });
    dns.set('mx.example.net', { A: ['127.0.0.1'] });
    const dir = tempDir();
    t.teardown(dir.remove);
    const configPath = writeTestConfig(
      dir.path,
      `[outbound]\nport = ${mx.port}\npoll_interval = "200ms"\n[webhooks]\nallow_private_targets = true\npoll_interval = "200ms"\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
      dns.server,
      '',
      undefined,
      pg.url,
    );
    const config = loadConfig({ path: configPath, env: {} });
    const setup = await openTestStore(config);
    const key = await makeKey(setup);
    await makeDomain(setup, 'example.com');
    await makeDomain(setup, 'in.example.com', { receiving: true });
    const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
    rx.secrets.set('/hook', secret);
    await setup.webhooks.createEndpoint({
      customerId: 1,
      url: rx.url('/hook'),
      events: ['email.delivered'],
      description: '',
      secret,
      now: Date.now() - 1000,
    });
    await setup.admin.close();
    const daemon = await startDaemon(config, silentLogger());
    t.teardown(() => daemon.stop());
    const send = (to: string) =>
      request(`${daemon.apiUrl}/api/v1/emails`, {
        key,
        body: { from: 'shop@example.com', to, subject: to, text_body: 'Hello' },
      });

    // Accepted before: delivered before or after the outage, never lost.
    const before = await send('before@example.net');
    t.equal(before.status, 202);
    // One in flight as the database goes: the MX holds its reply until the server is stopped.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let heldArrived!: () => void;
    const arrived = new Promise<void>((r) => (heldArrived = r));
    mx.holdData = (rcpt) => {
      if (!rcpt.startsWith('inflight')) return undefined;
      heldArrived();
      return held;
    };
    t.equal((await send('inflight@example.net')).status, 202);
    await waitFor('the in-flight message at the MX', () => mx.received.some((m) => m.to[0] === 'before@example.net'));
    await arrived;

    pg.stop();
    release(); // the MX now accepts it: its outcome must wait for the database
    const refused = await send('during@example.net');
    t.equal(refused.status, 503, 'the API refuses rather than acknowledge what it cannot store');
    t.equal(refused.body.error?.code, 'store_unavailable');
    t.ok(refused.headers.get('retry-after'), 'with Retry-After');
    t.equal((await fetch(`${daemon.apiUrl}/healthz`)).status, 503, 'healthz says so');
    const c = await RawSmtp.connect(daemon.smtp.port);
    await c.cmd('EHLO client.test');
    const smtp = await c.send('alice@sender.test', ['support@in.example.com'], 'Subject: hi\r\n\r\nhello\r\n');
    c.close();
    t.match(`${smtp.rcpt[0]} ${smtp.data}`, /451 4\.3\.0/, 'SMTP answers 451 4.3.0, never a false 250');

    pg.start();
    // Back without a restart: new sends accepted, the outcome held meanwhile written, all delivered once.
    const after = await waitFor(
      'a send accepted again',
      async () => ((await send('after@example.net')).status === 202 ? true : undefined),
      30_000,
      250,
    );
    t.ok(after);
    await waitFor(
      'every accepted message at the MX',
      () => ['before', 'inflight', 'after'].every((l) => mx.received.some((m) => m.to[0] === `${l}@example.net`)),
      60_000,
      100,
    );
    const sql = testSql(config);
    t.teardown(() => sql.close());
    await waitFor(
      'the in-flight outcome written',
      async () =>
        (await sql.value("SELECT count(*) FROM recipients WHERE state = 'delivered'")) >= 3 ? true : undefined,
      60_000,
      200,
    );
    const counts = mx.received.reduce((m, r) => m.set(r.to[0]!, (m.get(r.to[0]!) ?? 0) + 1), new Map<string, number>());
    t.same(
      [...counts].filter(([, n]) => n > 1),
      [],
      'none sent twice: the outcome waited for the database instead of the claim being given back',
    );
    t.equal(
      await sql.value("SELECT count(*) FROM recipients WHERE address = 'during@example.net'"),
      0,
      'the refused one was not stored',
    );
    t.equal(
      await sql.value(
        'SELECT count(*) FROM recipients r WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id)',
      ),
      0,
      'nothing half-written',
    );
    await waitFor('the delivery webhooks', () => rx.on('/hook').length >= 3, 60_000, 100);
    t.ok(
      rx.on('/hook').every((r) => r.verified),
      'signed',
    );
    t.equal((await fetch(`${daemon.apiUrl}/healthz`)).status, 200, 'healthy again');
  },
);
