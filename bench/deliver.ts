// bench/deliver: N queued 2 KB messages delivered to a loopback smtp-sink over SMTP (DKIM signing on),
// messages per second until the queue is empty; beside, in the same run, Postfix relaying the same
// N messages (injected by smtp-source while its outbound is held, then released) to the same sink.
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { workDir, spawnReady, stop, fmt, memoryOf, memoryLine, threadCpu, daemonArgs } from './lib.js';
import { ensurePostfix, startSink, heldRelay, smtpSource } from './postfix.js';
import { TestDnsServer } from '../test/helpers/dns-server.js';
import { openDb, migrate } from '../src/store/db.js';
import { ensureDefaultCustomer } from '../src/store/customers.js';
import { createKey } from '../src/store/keys.js';
import { addDomain, setVerified } from '../src/store/domains.js';
import { acceptMessage } from '../src/store/messages.js';
import { validateSendRequest } from '../src/domain/send-request.js';
import { Problems } from '../src/domain/errors.js';

const N = Number(process.env.BENCH_DELIVER_N ?? 20_000);
const SINK_PORT = 40025;
const POSTFIX_PORT = 40587;

async function waitUntil(check: () => boolean, limitMs: number): Promise<void> {
  const end = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('benchmark did not finish in time');
    await sleep(20);
  }
}

export async function benchDeliver(): Promise<{ lines: string[] }> {
  ensurePostfix();
  const dir = workDir('deliver');
  const sink = startSink(SINK_PORT);
  await sleep(300);
  const dns = await new TestDnsServer().start();
  dns.set('sink.test', { MX: [{ preference: 10, exchange: 'mx.sink.test' }] });
  dns.set('mx.sink.test', { A: ['127.0.0.1'] });
  try {
    // posthaste: fill the queue, then start the daemon and time until the queue is empty.
    const dataDir = join(dir, 'data');
    const db = openDb(dataDir);
    const now = Date.now();
    migrate(db, now);
    ensureDefaultCustomer(db, now);
    const key = createKey(db, { customerId: 1, kind: 'production', name: 'bench', now });
    const d = addDomain(db, { customerId: 1, name: 'example.com', receiving: false, now });
    setVerified(db, d.id, now);
    // Stored as the API stores it: the request body as received.
    const body = { from: 'bench@example.com', to: 'rcpt@sink.test', subject: 'bench', text_body: 'x'.repeat(76) + '\n'.repeat(1) + 'Lorem ipsum dolor sit amet. '.repeat(68) };
    if (validateSendRequest(body, { maxRecipients: 50 }) instanceof Problems) throw new Error('bad bench request');
    const request = Buffer.from(JSON.stringify(body));
    db.tx(() => {
      for (let i = 0; i < N; i++)
        acceptMessage(db, {
          customerId: 1,
          apiKeyId: key.id,
          sandbox: false,
          messageId: `bench${i}@example.com`,
          fromHeader: 'bench@example.com',
          senderDomain: 'example.com',
          subject: 'bench',
          metadata: {},
          request,
          recipients: [{ address: `rcpt${i}@sink.test`, domain: 'sink.test', field: 'to' }],
          now,
        });
    });
    const left = db.sqlite.prepare("SELECT COUNT(*) FROM recipients WHERE state IN ('queued', 'deferred')").pluck();
    const config = join(dir, 'posthaste.toml');
    writeFileSync(
      config,
      `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n[outbound]\nport = ${SINK_PORT}\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`,
    );
    const t0 = performance.now();
    const ph = await spawnReady(process.execPath, daemonArgs(config, join(dir, 'prof')), /API on/);
    await waitUntil(() => (left.get() as number) === 0, 600_000);
    const phSeconds = (performance.now() - t0) / 1000;
    const memory = memoryOf(ph.child.pid!);
    const threads = threadCpu(ph.child.pid!).filter((th) => th.seconds >= 0.1);
    await stop(ph.child);
    if (process.env.BENCH_PROF) return { lines: [`profile written to ${join(dir, 'prof')}`] };
    const delivered = db.sqlite.prepare("SELECT COUNT(*) FROM recipients WHERE state = 'delivered'").pluck().get() as number;
    const size = db.sqlite.prepare('SELECT AVG(size) FROM messages').pluck().get() as number;
    db.close();
    if (delivered !== N) throw new Error(`posthaste delivered ${delivered} of ${N}`);

    // Postfix: the same N through smtp-source into a held queue, released, timed until empty.
    const pf = heldRelay(join(dir, 'postfix'), POSTFIX_PORT, SINK_PORT).start();
    try {
      await sleep(500);
      smtpSource(POSTFIX_PORT, N, 20, 2048);
      await waitUntil(() => pf.queued() >= N, 120_000);
      const t1 = performance.now();
      pf.release();
      await waitUntil(() => pf.queued() === 0, 600_000);
      const pfSeconds = (performance.now() - t1) / 1000;
      const phRate = N / phSeconds;
      const pfRate = N / pfSeconds;
      return {
        lines: [
          `deliver: ${N} queued messages (~${Math.round(size)} bytes composed) to a loopback smtp-sink`,
          `  posthaste (DKIM rsa-sha256, 10 connections/domain, start included)  ${fmt(phRate)} msg/s  (${fmt(phSeconds, 2)} s)`,
          `  Postfix 3 relay (no DKIM, 20 connections/destination)               ${fmt(pfRate)} msg/s  (${fmt(pfSeconds, 2)} s)`,
          `  ratio posthaste / Postfix  ${fmt(phRate / pfRate, 2)}  (goal >= 2.0)`,
          memoryLine(memory.peakMiB),
          `  posthaste CPU seconds by thread: ${threads.map((th) => fmt(th.seconds, 1)).join(', ')}`,
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
