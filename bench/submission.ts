// bench/submission: messages per second taken over SMTP submission from 20 clients on kept
// connections, 2 KB messages (bench/submission-client.ts, its own process): posthaste's
// submission listener (AUTH PLAIN with an API key once per connection; each message's sender
// domain checked, the message stored and committed before its 250) against Postfix's smtpd taking
// the same messages from the same client into its queue (queue file fsynced before 250; no AUTH,
// Postfix lets loopback relay), the inbound benchmark's anchor. Four rounds each (BENCH_SUBMISSION_ROUNDS), alternating, after
// an untimed warm-up of each. The `guarded` variant (BENCH_VARIANTS; bench/lib-variants.ts): a
// second daemon in the same rounds, its customer with send quotas and its `[reputation]` section
// written out.

import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { TestDnsServer } from '../support/dns-server.js';
import {
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
import {
  cpuPer,
  GUARD_TOML,
  GUARD_WORDS,
  rotate,
  senderDataDir,
  storedMessages,
  variantsOn,
  withCpu,
} from './lib-variants.js';
import { ensurePostfix, heldRelay } from './postfix.js';

const N = Number(process.env.BENCH_SUBMISSION_N ?? 4000);
const SESSIONS = 20;
const ROUNDS = Number(process.env.BENCH_SUBMISSION_ROUNDS ?? 4);
/** Messages each side takes, untimed, before the rounds: Node's JIT and both queues warmed. */
const WARMUP = 500;
const TOTAL = WARMUP + ROUNDS * N;
const POSTFIX_PORT = fixedPort(24589);
const SUBMISSION_PORT = fixedPort(24587);
const GUARDED_PORT = fixedPort(24588);
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

/** A daemon taking submission on `port`, on its own data directory (senderDataDir), outbound held as Postfix's is: every message stays queued. */
async function startDaemon(dir: string, port: number, dns: string, guarded: boolean) {
  const dataDir = join(dir, 'data');
  const { db, full } = senderDataDir(dataDir, { quotas: guarded });
  const config = join(dir, 'posthaste.toml');
  writeFileSync(
    config,
    `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n` +
      `[submission]\nlisten = "127.0.0.1:${port}"\nallow_plaintext_auth_on_loopback = true\n[outbound]\nhold = true\n[dns]\nservers = ["${dns}"]\n[log]\nlevel = "warn"\n${guarded ? GUARD_TOML : ''}`,
  );
  const ph = await spawnReady(
    process.execPath,
    daemonArgs(config, join(dir, 'prof')),
    /submission on 127\.0\.0\.1:(\d+)/,
  );
  return { db, key: full, port: Number(ph.match[1]), child: ph.child, disk: undefined as DiskState | undefined };
}
type Daemon = Awaited<ReturnType<typeof startDaemon>>;
/** A round: messages per second, and the CPU seconds its daemon used meanwhile (NaN for Postfix, many processes). */
type Round = { rate: number; cpuS: number };

export async function benchSubmission(): Promise<{ lines: string[] }> {
  ensurePostfix();
  const guarded = variantsOn(['guarded'] as const).has('guarded');
  const dir = workDir('submission');
  const dns = await new TestDnsServer().start();
  const daemons: Daemon[] = [];
  try {
    daemons.push(await startDaemon(join(dir, 'plain'), SUBMISSION_PORT, dns.server, false));
    if (guarded) daemons.push(await startDaemon(join(dir, 'guarded'), GUARDED_PORT, dns.server, true));
    const pf = heldRelay(join(dir, 'postfix'), POSTFIX_PORT, RELAY_PORT).start();
    let rates: Round[][];
    let pfDisk: DiskState | undefined;
    let idle: number;
    let peaks: number[];
    try {
      idle = await idleMemory(daemons[0]!.child.pid!);
      await load(POSTFIX_PORT, undefined, WARMUP);
      for (const d of daemons) await load(d.port, d.key, WARMUP);
      rates = await rotate(ROUNDS, [
        async () => {
          pfDisk = await settleDisk();
          return { rate: await load(POSTFIX_PORT), cpuS: Number.NaN };
        },
        ...daemons.map((d) => async () => {
          d.disk = await settleDisk();
          return withCpu(d.child.pid!, async () => ({ rate: await load(d.port, d.key) }));
        }),
      ]);
      peaks = daemons.map((d) => memoryOf(d.child.pid!).peak);
      const deadline = Date.now() + 60_000;
      while (pf.queued() < TOTAL && Date.now() < deadline) await sleep(50);
      if (pf.queued() < TOTAL) throw new Error(`Postfix queued ${pf.queued()} of ${TOTAL}`);
    } finally {
      pf.stop();
      for (const d of daemons) await stop(d.child);
    }
    for (const d of daemons) {
      const n = storedMessages(d.db);
      if (n !== TOTAL) throw new Error(`posthaste stored ${n} of ${TOTAL}`);
    }
    return { lines: report(rates, daemons, pfDisk!, peaks, idle) };
  } finally {
    for (const d of daemons) {
      await stop(d.child);
      d.db.close();
    }
    await dns.stop();
  }
}

/** The benchmark's lines: each side's median and rounds, the ratios, the disk and the memory. */
function report(rounds: Round[][], daemons: Daemon[], pfDisk: DiskState, peaks: number[], idle: number): string[] {
  const [pfRates, phRates, gRates] = rounds.map((side) => side.map((r) => r.rate)) as [
    number[],
    number[],
    number[] | undefined,
  ];
  const cpu = (side: Round[]) =>
    `${fmt(
      cpuPer(side, () => N),
      3,
    )} ms`;
  const [phRate, pfRate] = [median(phRates), median(pfRates)];
  const each = (xs: number[]) => xs.map((x) => fmt(x)).join(', ');
  const lines = [
    `submission: ${N} messages of 2 KB a round, ${SESSIONS} clients on kept connections (MAIL/RCPT/DATA pipelined), ${ROUNDS} rounds alternating after ${WARMUP} untimed`,
    `  posthaste submission (AUTH once a connection, committed before 250)  ${fmt(phRate)} msg/s  (${each(phRates)})`,
    `  Postfix smtpd, same client and messages (queue file fsynced)        ${fmt(pfRate)} msg/s  (${each(pfRates)})`,
    `  ratio posthaste / Postfix  ${fmt(phRate / pfRate, 2)}  (goal >= 1.0)`,
    `  posthaste CPU a message during its rounds (user + system, every thread): ${cpu(rounds[1]!)}${rounds[2] ? `; guarded ${cpu(rounds[2])}` : ''}`,
  ];
  if (gRates)
    lines.push(
      `  guarded daemon (${GUARD_WORDS})  ${fmt(median(gRates))} msg/s  (${each(gRates)}; peak ${peaks[1]} MiB)`,
      `    ratio guarded / Postfix ${fmt(median(gRates) / pfRate, 2)}; guarded / posthaste ${fmt(median(gRates) / phRate, 2)} (rounds: ${gRates.map((g, i) => fmt(g / phRates[i]!, 2)).join(', ')})`,
    );
  lines.push(
    diskLine([
      { label: 'posthaste', ...daemons[0]!.disk! },
      ...(daemons[1] ? [{ label: 'guarded', ...daemons[1].disk! }] : []),
      { label: 'Postfix', ...pfDisk },
    ]),
    memoryLine(peaks[0]!, idle),
  );
  return lines;
}
