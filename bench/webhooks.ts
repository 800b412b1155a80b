// bench/webhooks: events per second delivered by the dispatcher to a local receiver that answers 200
// at once (N events, one endpoint, webhooks.concurrency_per_endpoint in flight), beside a bare undici
// POST loop with the same concurrency to the same receiver, in the same run.
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { ROOT, workDir, spawnReady, stop, fmt } from './lib.js';
import { openDb, migrate } from '../src/store/db.js';
import { ensureDefaultCustomer } from '../src/store/customers.js';
import { recordEvent } from '../src/store/events.js';
import { createEndpoint } from '../src/store/webhooks.js';
import { newSecret } from '../src/webhooks/sign.js';
import { TestDnsServer } from '../test/helpers/dns-server.js';

const N = Number(process.env.BENCH_WEBHOOKS_N ?? 30_000);
const CONCURRENCY = 4; // webhooks.concurrency_per_endpoint default

export async function benchWebhooks(): Promise<{ lines: string[] }> {
  const dir = workDir('webhooks');
  const rx = await spawnReady(process.execPath, [join(ROOT, 'dist/bench/receiver.js')], /LISTENING (\d+)/);
  const url = `http://127.0.0.1:${rx.match[1]}/hook`;
  const dns = await new TestDnsServer().start(); // no lookup may leave the machine
  try {
    const sample = JSON.stringify({ id: 'msg_x', type: 'email.delivered', timestamp: new Date().toISOString(), data: { email_id: 1, message_id: 'x@example.com', recipient: 'a@example.org', response: { code: 250, enhanced_code: '2.0.0', message: 'OK queued' }, mx: 'mx.example.org', tls: true, attempt: 1 } });

    // Anchor: a bare undici loop, same receiver, same concurrency, same body.
    const pool = new Pool(new URL(url).origin, { connections: CONCURRENCY });
    let sent = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (sent < N) {
          sent++;
          const r = await pool.request({ path: '/hook', method: 'POST', headers: { 'content-type': 'application/json' }, body: sample });
          await r.body.dump();
        }
      }),
    );
    const bareRate = N / ((performance.now() - t0) / 1000);
    await pool.close();

    // posthaste: N events in the outbox and one endpoint; start the daemon, time until all succeeded.
    const dataDir = join(dir, 'data');
    const db = openDb(dataDir);
    const now = Date.now();
    migrate(db, now);
    ensureDefaultCustomer(db, now);
    createEndpoint(db, { customerId: 1, url, events: null, description: 'bench', secret: newSecret(), now: now - 1000 });
    db.tx(() => {
      for (let i = 0; i < N; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data: JSON.parse(sample).data, now });
    });
    const config = join(dir, 'posthaste.toml');
    writeFileSync(config, `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[webhooks]\nallow_private_targets = true\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`);
    // The poll must not take CPU from the daemon it measures: MAX(id) of the attempt log is one
    // b-tree descent (ids are 1..N in a fresh table, one attempt per event when every answer is
    // 200), where COUNT(*) over the deliveries scans them all (it took ~12 % of a core at 20 ms).
    const attempts = db.sqlite.prepare('SELECT MAX(id) FROM webhook_attempts').pluck();
    const succeeded = db.sqlite.prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'succeeded'").pluck();
    const t1 = performance.now();
    const ph = await spawnReady(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, 'prof')}`] : []), join(ROOT, 'bin/posthaste.js'), '--config', config, 'serve'], /API on/);
    const ready = performance.now();
    const deadline = Date.now() + 300_000;
    while (((attempts.get() as number | null) ?? 0) < N) {
      if (Date.now() > deadline) throw new Error('webhook benchmark did not finish');
      await sleep(20);
    }
    const end = performance.now();
    const ok = succeeded.get() as number;
    if (ok !== N) throw new Error(`webhook benchmark: ${ok} of ${N} deliveries succeeded`);
    const phRate = N / ((end - t1) / 1000);
    const phSteady = N / ((end - ready) / 1000);
    await stop(ph.child);
    db.close();
    return {
      lines: [
        `webhooks: ${N} events, one endpoint, ${CONCURRENCY} requests in flight, http receiver in another process`,
        `  posthaste dispatcher (fan-out, sign, POST, log)  ${fmt(phSteady)} events/s from ready (${fmt(phRate)} with the daemon's start)`,
        `  bare undici POST loop (anchor)                   ${fmt(bareRate)} req/s`,
        `  ratio posthaste / bare undici  ${fmt(phSteady / bareRate, 2)}  (goals: >= 1,000 events/s and >= 0.5)`,
      ],
    };
  } finally {
    await dns.stop();
    await stop(rx.child);
  }
}
