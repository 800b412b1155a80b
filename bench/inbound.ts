// bench/inbound: messages per second accepted from smtp-source (Postfix's load generator; 20 sessions,
// connections reused, 2 KB messages, N in all): posthaste's listener (each message stored, parsed,
// SPF/DKIM/DMARC-checked and committed before its 250), Postfix's smtpd (queue file fsynced before
// 250) and a bare smtp-server that discards, in the same run.

import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { ensureDefaultCustomer } from '../src/store/sqlite/customers.js';
import { migrate, openDb } from '../src/store/sqlite/db.js';
import { addDomain } from '../src/store/sqlite/domains.js';
import { TestDnsServer } from '../support/dns-server.js';
import {
  type DiskState,
  daemonArgs,
  diskLine,
  fixedPort,
  fmt,
  idleMemory,
  memoryLine,
  memoryOf,
  ROOT,
  settleDisk,
  spawnReady,
  stop,
  workDir,
} from './lib.js';
import { ensurePostfix, heldRelay } from './postfix.js';

const N = Number(process.env.BENCH_INBOUND_N ?? 5000);
const SESSIONS = 20;
const POSTFIX_PORT = fixedPort(24588);
// Where its held queue would go: nothing listens there, nothing is sent.
const RELAY_PORT = fixedPort(24026);

/** Runs smtp-source without blocking this process (its DNS server must keep answering). */
async function source(port: number, to: string): Promise<number> {
  const t0 = performance.now();
  // -d: keep each session's connection for its next message; -l: message size.
  await promisify(execFile)(
    '/usr/sbin/smtp-source',
    [
      '-d',
      '-s',
      String(SESSIONS),
      '-l',
      '2048',
      '-m',
      String(N),
      '-f',
      'load@sender.test',
      '-t',
      to,
      `127.0.0.1:${port}`,
    ],
    { timeout: 600_000 },
  );
  return N / ((performance.now() - t0) / 1000);
}

export async function benchInbound(): Promise<{ lines: string[] }> {
  ensurePostfix();
  const dir = workDir('inbound');
  const dns = await new TestDnsServer().start();
  try {
    // Bare smtp-server sink.
    const bare = await spawnReady(process.execPath, [join(ROOT, 'dist/bench/bare-smtp.js')], /LISTENING (\d+)/);
    const bareRate = await source(Number(bare.match[1]), 'rcpt@in.example.com');
    await stop(bare.child);

    // posthaste.
    const dataDir = join(dir, 'data');
    const db = openDb(dataDir);
    migrate(db, Date.now());
    ensureDefaultCustomer(db, Date.now());
    addDomain(db, { customerId: 1, name: 'in.example.com', receiving: true, now: Date.now() });
    const stored = db.sqlite.prepare('SELECT COUNT(*) FROM inbound_messages').pluck();
    const config = join(dir, 'posthaste.toml');
    writeFileSync(
      config,
      `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n[inbound]\nrate_per_minute = 0\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`,
    );
    const ph = await spawnReady(process.execPath, daemonArgs(config, join(dir, 'prof')), /SMTP on 127\.0\.0\.1:(\d+)/);
    const idle = await idleMemory(ph.child.pid!);
    const phDisk = await settleDisk();
    const phRate = await source(Number(ph.match[1]), 'rcpt@in.example.com');
    const peak = memoryOf(ph.child.pid!).peak;
    await stop(ph.child);
    const n = stored.get() as number;
    db.close();
    if (n !== N) throw new Error(`posthaste stored ${n} of ${N}`);

    // Postfix smtpd into its queue (outbound held, so every message stays queued).
    const pf = heldRelay(join(dir, 'postfix'), POSTFIX_PORT, RELAY_PORT).start();
    let pfRate: number;
    let pfDisk: DiskState;
    try {
      await sleep(500);
      pfDisk = await settleDisk();
      pfRate = await source(POSTFIX_PORT, 'rcpt@in.example.com');
      const deadline = Date.now() + 60_000;
      while (pf.queued() < N && Date.now() < deadline) await sleep(50);
    } finally {
      pf.stop();
    }
    return {
      lines: [
        `inbound: ${N} messages of 2 KB from smtp-source, ${SESSIONS} sessions, connections reused`,
        `  posthaste (stored, parsed, SPF/DKIM/DMARC, committed before 250)  ${fmt(phRate)} msg/s`,
        `  Postfix smtpd (queue file fsynced before 250)                     ${fmt(pfRate)} msg/s`,
        `  bare smtp-server, discarding                                       ${fmt(bareRate)} msg/s`,
        `  ratio posthaste / Postfix  ${fmt(phRate / pfRate, 2)}  (goal >= 1.0)   posthaste / bare  ${fmt(phRate / bareRate, 2)}`,
        diskLine([
          { label: 'posthaste', ...phDisk },
          { label: 'Postfix', ...pfDisk },
        ]),
        memoryLine(peak, idle),
      ],
    };
  } finally {
    await dns.stop();
  }
}
