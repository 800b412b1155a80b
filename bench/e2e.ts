// bench/e2e: end to end, from the first message handed over to the last one at a loopback
// smtp-sink. posthaste: clients POST N 2 KB messages to the API (one per request, SESSIONS at a
// time) while the daemon composes, DKIM-signs and delivers them. Beside, in the same run, Postfix:
// smtp-source hands the same number of messages of the same size over SESSIONS SMTP sessions to
// its smtpd, and its smtp client relays them to the same sink. Both are timed until nothing is
// left to deliver.
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { workDir, spawnReady, stop, fmt, daemonArgs, idleMemory, memoryOf, memoryLine } from './lib.js';
import { ensurePostfix, startSink, smtpSource } from './postfix.js';
import { PostfixPeer } from '../test/helpers/postfix.js';
import { TestDnsServer } from '../test/helpers/dns-server.js';
import { openDb, migrate } from '../src/store/db.js';
import { ensureDefaultCustomer } from '../src/store/customers.js';
import { createKey } from '../src/store/keys.js';
import { addDomain, setVerified } from '../src/store/domains.js';

const N = Number(process.env.BENCH_E2E_N ?? 10_000);
const SESSIONS = 20;
const SINK_PORT = 40027;
const POSTFIX_PORT = 40589;

async function waitUntil(check: () => boolean, limitMs: number): Promise<void> {
  const end = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('benchmark did not finish in time');
    await sleep(20);
  }
}

export async function benchE2e(): Promise<{ lines: string[] }> {
  ensurePostfix();
  const dir = workDir('e2e');
  const sink = startSink(SINK_PORT);
  await sleep(300);
  const dns = await new TestDnsServer().start();
  dns.set('sink.test', { MX: [{ preference: 10, exchange: 'mx.sink.test' }] });
  dns.set('mx.sink.test', { A: ['127.0.0.1'] });
  try {
    const dataDir = join(dir, 'data');
    const db = openDb(dataDir);
    const now = Date.now();
    migrate(db, now);
    ensureDefaultCustomer(db, now);
    const key = createKey(db, { customerId: 1, kind: 'production', name: 'bench', now });
    const d = addDomain(db, { customerId: 1, name: 'example.com', receiving: false, now });
    setVerified(db, d.id, now);
    const delivered = db.sqlite.prepare("SELECT COUNT(*) FROM recipients WHERE state = 'delivered'").pluck();
    const config = join(dir, 'posthaste.toml');
    writeFileSync(
      config,
      `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n[outbound]\nport = ${SINK_PORT}\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`,
    );
    const ph = await spawnReady(process.execPath, daemonArgs(config, join(dir, 'prof')), /API on (http:\/\/127\.0\.0\.1:\d+)/);
    let phSeconds: number;
    let size: number;
    let peak: number;
    const idle = await idleMemory(ph.child.pid!);
    const pool = new Pool(ph.match[1]!, { connections: SESSIONS });
    try {
      // The deliver benchmark's message: about 2 KB composed.
      const body = (i: number) =>
        JSON.stringify({ from: 'bench@example.com', to: `rcpt${i}@sink.test`, subject: 'bench', text_body: `${'x'.repeat(76)}\n${'Lorem ipsum dolor sit amet. '.repeat(68)}` });
      let next = 0;
      let refused = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: SESSIONS }, async () => {
          while (next < N) {
            const res = await pool.request({ method: 'POST', path: '/api/v1/emails', headers: { authorization: `Token ${key.key}`, 'content-type': 'application/json' }, body: body(next++) });
            await res.body.dump();
            if (res.statusCode !== 202) refused++;
          }
        }),
      );
      if (refused) throw new Error(`posthaste refused ${refused} of ${N} messages`);
      await waitUntil(() => (delivered.get() as number) === N, 600_000);
      phSeconds = (performance.now() - t0) / 1000;
      peak = memoryOf(ph.child.pid!).peakMiB;
      size = db.sqlite.prepare('SELECT AVG(size) FROM messages').pluck().get() as number;
    } finally {
      await pool.close();
      await stop(ph.child);
      db.close();
    }

    // Postfix end to end: smtp-source → smtpd → queue → smtp → the same sink.
    const pf = new PostfixPeer({ dir: join(dir, 'postfix'), port: POSTFIX_PORT, relayPort: SINK_PORT, hostname: 'bench.local' }).start();
    try {
      await sleep(500);
      const t1 = performance.now();
      smtpSource(POSTFIX_PORT, N, SESSIONS, 2048);
      await waitUntil(() => pf.queued() === 0, 600_000);
      const pfSeconds = (performance.now() - t1) / 1000;
      const phRate = N / phSeconds;
      const pfRate = N / pfSeconds;
      return {
        lines: [
          `e2e: ${fmt(N)} messages (~${Math.round(size)} bytes composed) handed over by ${SESSIONS} clients at once, timed until the last is at a loopback smtp-sink`,
          `  posthaste (POST /api/v1/emails, compose, DKIM rsa-sha256, deliver)  ${fmt(phRate)} msg/s  (${fmt(phSeconds, 2)} s)`,
          `  Postfix 3 (smtp-source -> smtpd -> queue -> smtp, no DKIM)          ${fmt(pfRate)} msg/s  (${fmt(pfSeconds, 2)} s)`,
          `  ratio posthaste / Postfix  ${fmt(phRate / pfRate, 2)}  (goal >= 2.0)`,
          memoryLine(peak, idle),
        ],
      };
    } finally {
      pf.stop();
    }
  } finally {
    await dns.stop();
    sink.kill();
  }
}
