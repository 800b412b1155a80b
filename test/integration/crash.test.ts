import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { type DaemonProcess, spawnDaemon } from '../../support/daemon-process.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';
import { quiet } from '../../support/wait.js';
import {
  customerId,
  makeDomain,
  makeKey,
  openTestStore,
  TEST_ENGINE,
  tempDir,
  testStoreUrl,
  writeTestConfig,
} from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { testSql } from '../helpers/sql.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const TOTAL = 500;
const KILLS = 5;
const CLIENTS = 8;

const dns = await new TestDnsServer().start();
const mx = await new TestMx('127.0.0.1').start();
const rx = await new WebhookReceiver().start();
t.teardown(async () => {
  await Promise.all([dns.stop(), mx.stop(), rx.stop()]);
});
dns.set('crash.test', { MX: [{ preference: 10, exchange: 'mx.crash.test' }] });
dns.set('mx.crash.test', { A: ['127.0.0.1'] });

const dir = tempDir();
t.teardown(dir.remove);
const configPath = writeTestConfig(
  dir.path,
  // A short lease: on PostgreSQL the killed process's claims are released once it has run out (docs/cluster.md).
  `[cluster]\nlease = "3s"\n[outbound]\nport = ${mx.port}\npoll_interval = "100ms"\n[webhooks]\nallow_private_targets = true\npoll_interval = "100ms"\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
  dns.server,
  undefined,
  undefined,
  await testStoreUrl(t),
);
const config = loadConfig({ path: configPath, env: {} });
const setup = await openTestStore(config);
const key = await makeKey(setup);
await makeDomain(setup, 'example.com');
const endpoint = await setup.webhooks.createEndpoint({
  customerId: await customerId(setup),
  url: rx.url('/crash'),
  events: null,
  description: '',
  secret: 'whsec_' + Buffer.alloc(32, 7).toString('base64'),
  now: Date.now() - 1000,
});
rx.secrets.set('/crash', endpoint.secret);
await setup.admin.close();

t.test(`${TOTAL} messages, ${KILLS} kill -9 at random moments: nothing accepted is lost`, async (t) => {
  const accepted = new Set<string>();
  let posted = 0;
  let d: DaemonProcess = await spawnDaemon(configPath);
  let alive = true;

  // Clients post until TOTAL requests were made; a request that dies with the daemon is just retried later.
  const client = async () => {
    while (posted < TOTAL) {
      if (!alive) {
        await quiet(20); // the daemon is being restarted
        continue;
      }
      const n = posted++;
      try {
        const res = await fetch(`${d.apiUrl}/api/v1/emails`, {
          method: 'POST',
          headers: { authorization: `Token ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            from: 'a@example.com',
            to: `r${n}@crash.test`,
            subject: `crash ${n}`,
            text_body: 'x',
          }),
        });
        const body = (await res.json()) as { message_id?: string };
        if (res.status === 202 && body.message_id) accepted.add(body.message_id);
      } catch {
        /* the daemon died mid-request: no 202, so no promise was made */
      }
    }
  };
  const clients = Promise.all(Array.from({ length: CLIENTS }, client));

  for (let k = 0; k < KILLS; k++) {
    await quiet(200 + Math.random() * 900); // a kill at a random moment
    alive = false;
    d.child.kill('SIGKILL');
    await d.exited;
    d = await spawnDaemon(configPath);
    alive = true;
  }
  await clients;
  t.ok(accepted.size > TOTAL / 2, `${accepted.size} of ${TOTAL} requests were accepted`);

  // Let the last daemon finish: every accepted message at the MX, every event at the receiver.
  const sql = testSql(config);
  t.teardown(() => sql.close());
  const atMx = () =>
    new Set(mx.received.map((m) => /^Message-ID: <([^>]+)>/im.exec(m.data.toString())?.[1]).filter(Boolean));
  const eventIds = async () => (await sql.all<{ id: string }>('SELECT id FROM events')).map((r) => r.id);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const mxIds = atMx();
    const got = new Set(rx.on('/crash').map((r) => r.id));
    const missingMx = [...accepted].filter((id) => !mxIds.has(id));
    const missingHooks = (await eventIds()).filter((id) => !got.has(id));
    if ((missingMx.length === 0 && missingHooks.length === 0) || Date.now() > deadline) {
      t.same(missingMx, [], 'every message that got a 202 reached the MX at least once');
      t.same(missingHooks, [], 'every event reached the webhook receiver');
      break;
    }
    await quiet(200); // then look again
  }
  const stored = new Set(
    (await sql.all<{ message_id: string }>('SELECT message_id FROM messages')).map((r) => r.message_id),
  );
  t.same(
    [...accepted].filter((id) => !stored.has(id)),
    [],
    'no 202 was sent for a message that is not in the store',
  );
  t.ok(
    rx.on('/crash').every((r) => r.verified),
    'every webhook verifies',
  );
  if (TEST_ENGINE === 'sqlite') t.equal(await sql.value('PRAGMA integrity_check'), 'ok');
  const dup = mx.received.length - atMx().size;
  t.comment(
    `accepted ${accepted.size}; MX received ${mx.received.length} (${dup} duplicates after kills); webhooks ${rx.on('/crash').length} for ${(await eventIds()).length} events`,
  );
  d.child.kill('SIGTERM');
  t.equal((await d.exited).code, 0);
});
