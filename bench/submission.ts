// bench/submission: messages per second taken over SMTP submission from 20 clients on kept
// connections, 2 KB messages (bench/submission-client.ts, its own process): posthaste's
// submission listener (AUTH PLAIN with an API key once per connection; each message's sender
// domain checked, the message stored and committed before its 250) against Postfix's smtpd taking
// the same messages from the same client into its queue (queue file fsynced before 250; no AUTH,
// Postfix lets loopback relay), the inbound benchmark's anchor. Four rounds each (BENCH_SUBMISSION_ROUNDS), alternating, after
// an untimed warm-up of each.

import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { fullGrant } from '../src/domain/key-scopes.js';
import { ensureDefaultCustomer } from '../src/store/sqlite/customers.js';
import { migrate, openDb } from '../src/store/sqlite/db.js';
import { addDomain, setVerified } from '../src/store/sqlite/domains.js';
import { createKey } from '../src/store/sqlite/keys.js';
import { TestDnsServer } from '../support/dns-server.js';
import {
  alternate,
  type DiskState,
  daemonArgs,
  diskLine,
  fixedPort,
  fmt,
  idleMemory,
  median,
  memoryLine,
  memoryOf,
  ROOT,
  settleDisk,
  spawnReady,
  stop,
  workDir,
} from './lib.js';
import { ensurePostfix, heldRelay } from './postfix.js';

const N = Number(process.env.BENCH_SUBMISSION_N ?? 4000);
const SESSIONS = 20;
const ROUNDS = Number(process.env.BENCH_SUBMISSION_ROUNDS ?? 4);
/** Messages each side takes, untimed, before the rounds: Node's JIT and both queues warmed. */
const WARMUP = 500;
const TOTAL = WARMUP + ROUNDS * N;
const POSTFIX_PORT = fixedPort(24589);
const SUBMISSION_PORT = fixedPort(24587);
// Where Postfix's held queue would go: nothing listens there, nothing is sent.
const RELAY_PORT = fixedPort(24027);

/** The load generator against 127.0.0.1:port (with AUTH when a key is given): messages per second. */
async function load(port: number, key?: string, count = N): Promise<number> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      join(ROOT, 'dist/bench/submission-client.js'),
      String(port),
      String(count),
      String(SESSIONS),
      ...(key ? [key] : []),
    ],
    {
      timeout: 600_000,
    },
  );
  const rate = /RATE (\S+)/.exec(stdout);
  if (!rate) throw new Error(`submission-client said: ${stdout}`);
  return Number(rate[1]);
}

export async function benchSubmission(): Promise<{ lines: string[] }> {
  ensurePostfix();
  const dir = workDir('submission');
  const dns = await new TestDnsServer().start();
  try {
    const dataDir = join(dir, 'data');
    const db = openDb(dataDir);
    migrate(db, Date.now());
    ensureDefaultCustomer(db, Date.now());
    const key = createKey(db, {
      grant: fullGrant(),
      customerId: 1,
      kind: 'production',
      name: 'bench',
      now: Date.now(),
    }).key;
    setVerified(
      db,
      addDomain(db, { customerId: 1, name: 'example.com', receiving: false, now: Date.now() }).id,
      Date.now(),
    );
    const stored = db.sqlite.prepare('SELECT COUNT(*) FROM messages').pluck();
    const config = join(dir, 'posthaste.toml');
    // Outbound held, as Postfix's is: every message stays queued.
    writeFileSync(
      config,
      `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n` +
        `[submission]\nlisten = "127.0.0.1:${SUBMISSION_PORT}"\nallow_plaintext_auth_on_loopback = true\n[outbound]\nhold = true\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`,
    );
    const ph = await spawnReady(
      process.execPath,
      daemonArgs(config, join(dir, 'prof')),
      /submission on 127\.0\.0\.1:(\d+)/,
    );
    const pf = heldRelay(join(dir, 'postfix'), POSTFIX_PORT, RELAY_PORT).start();
    let rates: { anchor: number[]; subject: number[] };
    const disk: { ph?: DiskState; pf?: DiskState } = {};
    let idle: number;
    let peak: number;
    try {
      idle = await idleMemory(ph.child.pid!);
      await load(POSTFIX_PORT, undefined, WARMUP);
      await load(Number(ph.match[1]), key, WARMUP);
      rates = await alternate(
        ROUNDS,
        async () => {
          disk.pf = await settleDisk();
          return load(POSTFIX_PORT);
        },
        async () => {
          disk.ph = await settleDisk();
          return load(Number(ph.match[1]), key);
        },
      );
      peak = memoryOf(ph.child.pid!).peak;
      const deadline = Date.now() + 60_000;
      while (pf.queued() < TOTAL && Date.now() < deadline) await sleep(50);
      if (pf.queued() < TOTAL) throw new Error(`Postfix queued ${pf.queued()} of ${TOTAL}`);
    } finally {
      pf.stop();
      await stop(ph.child);
    }
    const n = stored.get() as number;
    db.close();
    if (n !== TOTAL) throw new Error(`posthaste stored ${n} of ${TOTAL}`);
    const phRate = median(rates.subject);
    const pfRate = median(rates.anchor);
    const each = (xs: number[]) => xs.map((x) => fmt(x)).join(', ');
    return {
      lines: [
        `submission: ${N} messages of 2 KB a round, ${SESSIONS} clients on kept connections (MAIL/RCPT/DATA pipelined), ${ROUNDS} rounds alternating after ${WARMUP} untimed`,
        `  posthaste submission (AUTH once a connection, committed before 250)  ${fmt(phRate)} msg/s  (${each(rates.subject)})`,
        `  Postfix smtpd, same client and messages (queue file fsynced)        ${fmt(pfRate)} msg/s  (${each(rates.anchor)})`,
        `  ratio posthaste / Postfix  ${fmt(phRate / pfRate, 2)}  (goal >= 1.0)`,
        diskLine([
          { label: 'posthaste', ...disk.ph! },
          { label: 'Postfix', ...disk.pf! },
        ]),
        memoryLine(peak, idle),
      ],
    };
  } finally {
    await dns.stop();
  }
}
