import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { utcDay } from '../../src/domain/tls-report.js';
import { ManualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startDaemon } from '../../src/main.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';
import {
  makeDomain,
  makeKey,
  openTestStore,
  TEST_ENGINE,
  tempDir,
  testStoreUrl,
  writeTestConfig,
} from '../helpers/env.js';
import { fixture, fixturePath } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';

// TLS reports on three nodes sharing one PostgreSQL: each node counts the sessions of the mail it
// delivered, the day's report sums them all, and when the three send the day's reports at once
// the domain gets one report, from one node; a later run (a restart's) sends nothing again.

if (TEST_ENGINE !== 'postgres') {
  t.pass('PostgreSQL only (several nodes on one database): run with POSTHASTE_TEST_STORE=postgres');
} else {
  t.setTimeout(300_000);
  const posted: Buffer[] = [];
  const web = https.createServer(
    { key: fixture('tls/server-key.pem'), cert: fixture('tls/server.pem') },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        posted.push(Buffer.concat(chunks));
        res.writeHead(200).end();
      });
    },
  );
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', () => resolve()));
  const dns = await new TestDnsServer().start();
  const mx = await new TestMx('127.0.0.1').start();
  t.teardown(async () => {
    await dns.stop();
    await mx.stop();
    await new Promise((resolve) => web.close(resolve));
  });
  dns.set('many.test', { MX: [{ preference: 10, exchange: 'mx.many.test' }] });
  dns.set('mx.many.test', { A: ['127.0.0.1'] });
  dns.set('_smtp._tls.many.test', {
    TXT: [`v=TLSRPTv1; rua=https://127.0.0.1:${(web.address() as AddressInfo).port}/r`],
  });
  const day0 = Date.UTC(2026, 10, 27, 12);
  const day = utcDay(day0);
  const url = await testStoreUrl(t);
  const node = async (name: string) => {
    const dir = tempDir();
    t.teardown(dir.remove);
    const path = writeTestConfig(
      dir.path,
      `[outbound]\nport = ${mx.port}\n[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n`,
      dns.server,
      '',
      undefined,
      url,
    );
    const config = loadConfig({ path, env: { POSTHASTE_SERVER_NODE_NAME: name } });
    const clock = new ManualClock(day0);
    const daemon = await startDaemon(config, silentLogger(), { clock, manualDelivery: true });
    t.teardown(() => daemon.stop());
    return { config, daemon, clock };
  };
  const nodes = [await node('a'), await node('b'), await node('c')];
  const store = await openTestStore(nodes[0]!.config);
  t.teardown(() => store.admin.close());
  const key = await makeKey(store);
  await makeDomain(store, 'example.com');

  t.test('three nodes: their sessions summed in one report, sent once', async (t) => {
    for (const [i, n] of nodes.entries()) {
      const r = await request(`${n.daemon.apiUrl}/api/v1/emails`, {
        key,
        body: { from: 'shop@example.com', to: `r${i}@many.test`, subject: 'q', text_body: 'q' },
      });
      t.equal(r.status, 202);
      await n.daemon.scheduler.drain();
    }
    t.equal(mx.received.length, 3);
    for (const n of nodes) n.clock.advance(86_400_000);
    // A run for a day without sessions adds each node's counted sessions to the store, and sends nothing.
    for (const n of nodes) t.same((await n.daemon.tlsReports.run('2000-01-01')).sent, []);
    const runs = await Promise.all(nodes.map((n) => n.daemon.tlsReports.run(day)));
    t.same(runs.map((r) => r.sent.length).sort(), [0, 0, 1], 'one node sent it');
    t.equal(posted.length, 1, 'one report received');
    const report = JSON.parse(gunzipSync(posted[0]!).toString());
    t.match(report.policies, [
      {
        policy: { 'policy-type': 'no-policy-found', 'policy-domain': 'many.test' },
        summary: { 'total-successful-session-count': 3, 'total-failure-session-count': 0 },
      },
    ]);
    const again = await Promise.all(nodes.map((n) => n.daemon.tlsReports.run(day)));
    t.same(
      again.map((r) => r.sent.length),
      [0, 0, 0],
      'sent: never again',
    );
    t.equal(posted.length, 1);
    t.match(await store.tlsReports.sentOn(day), [{ domain: 'many.test', sent_at: Number }]);
  });
}
