// bench/webhooks: events per second delivered by the dispatcher to a local receiver that answers 200
// at once (one endpoint, webhooks.concurrency_per_endpoint in flight), beside a bare undici POST
// loop with the same concurrency to the same receiver, in the same run.
//
// Both sides are measured in alternating rounds of ROUND_N events each, after WARMUP_ROUNDS
// warm-up rounds each that are not counted, and each round after a pause of SETTLE_MS: the daemon
// runs throughout, and each of its rounds is a batch of events written to the outbox, timed until
// the last one's attempt is logged. So JIT warm-up and changes in the machine's speed during the
// run fall on both sides alike.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { ensureDefaultCustomer } from '../src/store/sqlite/customers.js';
import { migrate, openDb } from '../src/store/sqlite/db.js';
import { recordEvent } from '../src/store/sqlite/events.js';
import { createEndpoint } from '../src/store/sqlite/webhooks.js';
import { newSecret } from '../src/webhooks/sign.js';
import { TestDnsServer } from '../support/dns-server.js';
import {
  alternate,
  daemonArgs,
  fmt,
  idleMemory,
  memoryLine,
  memoryOf,
  ROOT,
  spawnReady,
  stop,
  workDir,
} from './lib.js';

/** Events per round, and measured rounds per side (at least 10,000 events in all per side). */
const ROUND_N = Number(process.env.BENCH_WEBHOOKS_N ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const CONCURRENCY = 4; // webhooks.concurrency_per_endpoint default
/** Pause before each measured round. */
const SETTLE_MS = 500;
const WARMUP_ROUNDS = Number(process.env.BENCH_WEBHOOKS_WARMUP ?? 2);

export async function benchWebhooks(): Promise<{ lines: string[] }> {
  const dir = workDir('webhooks');
  const rx = await spawnReady(process.execPath, [join(ROOT, 'dist/bench/receiver.js')], /LISTENING (\d+)/);
  const url = `http://127.0.0.1:${rx.match[1]}/hook`;
  const dns = await new TestDnsServer().start(); // no lookup may leave the machine
  const sample = JSON.stringify({
    id: 'msg_x',
    type: 'email.delivered',
    timestamp: new Date().toISOString(),
    data: {
      email_id: 1,
      message_id: 'x@example.com',
      recipient: 'a@example.org',
      response: { code: 250, enhanced_code: '2.0.0', message: 'OK queued' },
      mx: 'mx.example.org',
      tls: true,
      attempt: 1,
    },
  });
  const data = JSON.parse(sample).data as Record<string, unknown>;

  const dataDir = join(dir, 'data');
  const db = openDb(dataDir);
  const now = Date.now();
  migrate(db, now);
  ensureDefaultCustomer(db, now);
  createEndpoint(db, { customerId: 1, url, events: null, description: 'bench', secret: newSecret(), now: now - 1000 });
  const config = join(dir, 'posthaste.toml');
  // A short poll interval: the events of a round are written by this process, so the daemon
  // finds them by polling (at most 10 ms late, under 1 % of a round).
  writeFileSync(
    config,
    `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n[webhooks]\nallow_private_targets = true\npoll_interval = "10ms"\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`,
  );
  // The poll must not take CPU from the daemon it measures: MAX(id) of the attempt log is one
  // b-tree descent (ids are 1..n in a fresh table, one attempt per event when every answer is
  // 200), where COUNT(*) over the deliveries scans them all (it took ~12 % of a core at 20 ms).
  const attempts = db.sqlite.prepare('SELECT MAX(id) FROM webhook_attempts').pluck();
  const succeeded = db.sqlite.prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'succeeded'").pluck();
  const pool = new Pool(new URL(url).origin, { connections: CONCURRENCY });
  const ph = await spawnReady(process.execPath, daemonArgs(config, join(dir, 'prof')), /API on/);
  const idle = await idleMemory(ph.child.pid!);
  let peak = 0;

  /** Anchor: a bare undici loop, same receiver, same concurrency, same body; seconds for n requests. */
  const bareRound = async (n: number): Promise<number> => {
    let sent = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (sent < n) {
          sent++;
          const r = await pool.request({
            path: '/hook',
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: sample,
          });
          await r.body.dump();
        }
      }),
    );
    return (performance.now() - t0) / 1000;
  };
  /**
   * posthaste: n events written to the outbox in one commit; seconds from that commit until the
   * last attempt is logged. Writing the events (~15 µs each, in this process, while the daemon
   * can see none of them yet) is the producer's work, as building the body is the bare loop's,
   * so neither is timed.
   */
  let written = 0;
  const phRound = async (n: number): Promise<number> => {
    db.tx(() => {
      for (let i = 0; i < n; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data, now: Date.now() });
    });
    const t0 = performance.now();
    written += n;
    const deadline = Date.now() + 300_000;
    while (((attempts.get() as number | null) ?? 0) < written) {
      if (Date.now() > deadline) throw new Error('webhook benchmark did not finish');
      await sleep(5);
    }
    return (performance.now() - t0) / 1000;
  };

  let bareSeconds: number[];
  let phSeconds: number[];
  try {
    // Warm-up, not counted: two rounds each, alternating (after one, the first measured bare
    // round was still the slowest of the run, by 20-30 %).
    for (let i = 0; i < WARMUP_ROUNDS; i++) {
      await bareRound(ROUND_N);
      await phRound(ROUND_N);
    }
    // Each round starts from a quiet machine: work a round leaves behind (the daemon's WAL
    // checkpoint after its last commit, V8's concurrent GC and compiler threads) would otherwise
    // run in the next round, which is often the other side's.
    const settled =
      <T>(round: () => Promise<T>) =>
      async (): Promise<T> => {
        await sleep(SETTLE_MS);
        return round();
      };
    ({ anchor: bareSeconds, subject: phSeconds } = await alternate(
      ROUNDS,
      settled(() => bareRound(ROUND_N)),
      settled(() => phRound(ROUND_N)),
    ));
    const ok = succeeded.get() as number;
    if (ok !== written) throw new Error(`webhook benchmark: ${ok} of ${written} deliveries succeeded`);
    peak = memoryOf(ph.child.pid!).peak;
  } finally {
    await stop(ph.child);
    await pool.close();
    db.close();
    await dns.stop();
    await stop(rx.child);
  }
  const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
  const phRate = (ROUNDS * ROUND_N) / sum(phSeconds);
  const bareRate = (ROUNDS * ROUND_N) / sum(bareSeconds);
  const rounds = phSeconds.map((s, i) => bareSeconds[i]! / s);
  return {
    lines: [
      `webhooks: one endpoint, ${CONCURRENCY} requests in flight, http receiver in another process; ${ROUNDS} rounds of ${fmt(ROUND_N)} events per side, alternating, after ${WARMUP_ROUNDS} warm-up rounds each, ${SETTLE_MS} ms pause before each`,
      `  posthaste dispatcher (fan-out, sign, POST, log)  ${fmt(phRate)} events/s (outbox commit to last attempt logged)`,
      `  bare undici POST loop (anchor)                   ${fmt(bareRate)} req/s`,
      `  ratio posthaste / bare undici  ${fmt(phRate / bareRate, 2)}  (goals: >= 1,000 events/s and >= 0.5; rounds: ${rounds.map((r) => fmt(r, 2)).join(', ')})`,
      `  rounds, events/s: ${phSeconds.map((s) => fmt(ROUND_N / s)).join(', ')}; bare req/s: ${bareSeconds.map((s) => fmt(ROUND_N / s)).join(', ')}`,
      memoryLine(peak, idle),
    ],
  };
}
