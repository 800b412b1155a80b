// bench/accept: accepted messages per second through POST /api/v1/emails (50 connections, bounded),
// beside a bare fastify server answering 202 to the same JSON, and the single-row
// synchronous=FULL commit rate of better-sqlite3 on the same disk. All in one run. Variants in the
// same rounds (BENCH_VARIANTS selects them; bench/lib-variants.ts): `scoped`, the same daemon
// with a key scoped to sending as the sending domain; `guarded`, a second daemon whose customer has
// send quotas and whose `[reputation]` section is written out; `batch`, the batch route.
//
// The servers are up together and measured in alternating rounds (after a warm-up round each
// that is not counted), so a change in the machine's speed during the run (this VM's bare
// fastify figure alone moved between 14.7k and 30k req/s from one minute to the next) falls on
// every side alike instead of on whichever ran at the wrong moment.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { openDb } from '../src/store/sqlite/db.js';
import { TestDnsServer } from '../support/dns-server.js';
import {
  alternate,
  daemonArgs,
  fmt,
  httpLoad,
  idleMemory,
  type LoadResult,
  memoryLine,
  memoryOf,
  ROOT,
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

/** Seconds of each measured round; ROUNDS rounds per server, alternating which goes first. */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const WARMUP_SECONDS = 2;
const CONNECTIONS = 50;
const BATCH = 50;
const BATCH_CONNECTIONS = 10;
const VARIANTS = ['scoped', 'guarded', 'batch'] as const;

function singleRowCommitRate(dir: string, seconds: number): number {
  const db = new BetterSqlite3(join(dir, 'commit-rate.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)');
  const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
  const payload = Buffer.alloc(2048, 1);
  const end = Date.now() + seconds * 1000;
  let n = 0;
  while (Date.now() < end) {
    ins.run(payload); // autocommit: one transaction, one fsync per row
    n++;
  }
  db.close();
  return n / seconds;
}

const body = JSON.stringify({
  from: 'Shop <orders@example.com>',
  to: 'alice@example.org',
  subject: 'Your order #1234',
  text_body: 'Thank you for your order. '.repeat(60),
  metadata: { order: '1234' },
});
const headersOf = (key: string) => ({ 'content-type': 'application/json', authorization: `Token ${key}` });
const load = (url: string, key: string, seconds: number, b = body, connections = CONNECTIONS) =>
  httpLoad(url, { connections, seconds, headers: headersOf(key), body: b });
const rate = (runs: LoadResult[]) => runs.reduce((a, r) => a + r.requests, 0) / (runs.length * SECONDS);
/** A round, with the CPU seconds its server used meanwhile. */
type Round = LoadResult & { cpuS: number };
const accepted = (runs: LoadResult[]) => runs.reduce((a, r) => a + r.requests, 0);

interface Daemon {
  url: string;
  pid: number;
  stop(): Promise<void>;
  dataDir: string;
  /** 202s it answered, every round and warm-up (the batch's counted by its messages). */
  accepted: number;
  /** A round of single sends with `key`, its 202s counted, with the daemon's CPU seconds meanwhile. */
  send(key: string, seconds: number): Promise<Round>;
}

/**
 * A daemon on its own data directory (senderDataDir), the queue held (outbound.hold), so delivery
 * (bench/deliver) does not share the 2 cores; the DNS server on loopback keeps every lookup on the
 * machine all the same.
 */
async function startDaemon(dir: string, dns: string, opts: { guarded?: boolean } = {}) {
  const dataDir = join(dir, 'data');
  const { db, full, scoped } = senderDataDir(dataDir, { quotas: opts.guarded ?? false });
  db.close();
  const config = join(dir, 'posthaste.toml');
  writeFileSync(
    config,
    `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n[outbound]\nhold = true\n[dns]\nservers = ["${dns}"]\n[log]\nlevel = "warn"\n${opts.guarded ? GUARD_TOML : ''}`,
  );
  const ph = await spawnReady(
    process.execPath,
    daemonArgs(config, join(dir, 'prof')),
    /API on http:\/\/127\.0\.0\.1:(\d+)/,
  );
  const daemon: Daemon = {
    url: `http://127.0.0.1:${ph.match[1]}/api/v1/emails`,
    pid: ph.child.pid!,
    stop: () => stop(ph.child),
    dataDir,
    accepted: 0,
    async send(key, seconds) {
      const r = await withCpu(this.pid, () => load(this.url, key, seconds));
      this.accepted += r.requests;
      return r;
    },
  };
  return { daemon, full, scoped };
}

/** Every 202 stored: the rows in a daemon's store, checked against what it answered. */
function checkStored(d: Daemon): number {
  const db = openDb(d.dataDir);
  const stored = storedMessages(db);
  db.close();
  if (stored < d.accepted) throw new Error(`only ${stored} messages stored for ${d.accepted} 202s`);
  return stored;
}

/** A variant's line and its ratios to the full key's rounds (same daemon or not) and the anchor's. */
function variantLine(
  label: string,
  runs: LoadResult[],
  full: LoadResult[],
  bare: LoadResult[],
  extra: string,
): string[] {
  const perRound = runs.map((r, i) => fmt(r.perSecond / full[i]!.perSecond, 2)).join(', ');
  const failed = runs.reduce((a, r) => a + r.failed, 0);
  return [
    `  ${label}  ${fmt(rate(runs))} accepted/s  (worst p99 ${fmt(Math.max(...runs.map((r) => r.p99ms)), 1)} ms, ${failed} not 2xx; rounds: ${runs.map((r) => fmt(r.perSecond)).join(', ')}${extra})`,
    `    ratio to the full key ${fmt(rate(runs) / rate(full), 2)} (rounds: ${perRound}); to bare fastify ${fmt(rate(runs) / rate(bare), 2)}`,
  ];
}

export async function benchAccept(): Promise<{ lines: string[] }> {
  const on = variantsOn(VARIANTS);
  const dir = workDir('accept');
  const dns = await new TestDnsServer().start();
  const bare = await spawnReady(process.execPath, [join(ROOT, 'dist/bench/bare-fastify.js')], /LISTENING (\d+)/);
  const bareUrl = `http://127.0.0.1:${bare.match[1]}/api/v1/emails`;
  const started: Daemon[] = [];
  try {
    const a = await startDaemon(join(dir, 'plain'), dns.server);
    started.push(a.daemon);
    const g = on.has('guarded') ? await startDaemon(join(dir, 'guarded'), dns.server, { guarded: true }) : undefined;
    if (g) started.push(g.daemon);
    const idle = await idleMemory(a.daemon.pid);
    // Each side: the anchor, the full key, then the variants on; each warmed up once, untimed.
    const sides: Array<(seconds: number) => Promise<Round>> = [
      (seconds) => withCpu(bare.child.pid!, () => load(bareUrl, a.full, seconds)),
      (seconds) => a.daemon.send(a.full, seconds),
    ];
    if (on.has('scoped')) sides.push((seconds) => a.daemon.send(a.scoped, seconds));
    if (g) sides.push((seconds) => g.daemon.send(g.full, seconds));
    for (const side of sides) await side(WARMUP_SECONDS);
    const runs = await rotate(
      ROUNDS,
      sides.map((side) => () => side(SECONDS)),
    );
    const batch = on.has('batch') ? await batchRounds(a.daemon, a.full) : undefined;
    const peaks = started.map((d) => memoryOf(d.pid).peak);
    for (const d of started) await d.stop();
    started.length = 0;
    return {
      lines: report(runs, {
        on,
        batch,
        stored: checkStored(a.daemon),
        guardedStored: g && checkStored(g.daemon),
        peaks,
        idle,
        dir,
      }),
    };
  } finally {
    for (const d of started) await d.stop();
    await stop(bare.child);
    await dns.stop();
  }
}

/** The batch route (BATCH messages a request, fewer connections) in 2 rounds alternating with the single send. */
async function batchRounds(d: Daemon, key: string) {
  const batchBody = `[${Array.from({ length: BATCH }, () => body).join(',')}]`;
  const batchLoad = (seconds: number) => load(`${d.url}/batch`, key, seconds, batchBody, BATCH_CONNECTIONS);
  await batchLoad(WARMUP_SECONDS);
  const runs = await alternate(
    2,
    () => load(d.url, key, SECONDS),
    () => batchLoad(SECONDS),
  );
  d.accepted += accepted(runs.anchor) + accepted(runs.subject) * BATCH;
  return runs;
}

function report(
  runs: Round[][],
  r: {
    on: Set<(typeof VARIANTS)[number]>;
    batch: { anchor: LoadResult[]; subject: LoadResult[] } | undefined;
    stored: number;
    guardedStored: number | undefined;
    peaks: number[];
    idle: number;
    dir: string;
  },
): string[] {
  const [bareRuns, phRuns, ...rest] = runs as [Round[], Round[], ...Round[][]];
  const phRate = rate(phRuns);
  const bareRate = rate(bareRuns);
  const p99 = (rs: LoadResult[]) => Math.max(...rs.map((x) => x.p99ms));
  const failed = phRuns.reduce((a, x) => a + x.failed, 0);
  const socketErrors = phRuns.map((x) => x.socketErrors).filter((e) => e !== 'none');
  const commits = singleRowCommitRate(r.dir, 3);
  const lines = [
    `accept: wrk, ${CONNECTIONS} connections, ~1.7 KB JSON body, queue held (accept path only); ${ROUNDS} rounds of ${SECONDS} s per server, alternating, after ${WARMUP_SECONDS} s of warm-up each`,
    `  posthaste POST /api/v1/emails   ${fmt(phRate)} accepted/s  (worst p99 ${fmt(p99(phRuns), 1)} ms, ${failed} not 2xx, socket errors: ${socketErrors.length ? socketErrors.join('; ') : 'none'}, ${r.stored} rows stored)`,
    `  bare fastify 202 (anchor)       ${fmt(bareRate)} req/s  (worst p99 ${fmt(p99(bareRuns), 1)} ms)`,
    `  SQLite single-row FULL commits  ${fmt(commits)} commits/s (same disk)`,
    `  ratio posthaste / bare fastify  ${fmt(phRate / bareRate, 2)}  (goal >= 0.5; rounds: ${phRuns.map((x, i) => fmt(x.perSecond / bareRuns[i]!.perSecond, 2)).join(', ')})`,
    `  rounds, accepted/s: ${phRuns.map((x) => fmt(x.perSecond)).join(', ')}; bare req/s: ${bareRuns.map((x) => fmt(x.perSecond)).join(', ')}`,
    `  ratio posthaste / single commit ${fmt(phRate / commits, 2)}  (>1 only with group commit)`,
  ];
  const cpu = (rs: Round[]) =>
    `${fmt(
      cpuPer(rs, (x) => x.requests),
      3,
    )} ms`;
  const named = [
    ['full key', phRuns],
    ...(r.on.has('scoped') ? [['scoped', rest[0]!]] : []),
    ...(r.on.has('guarded') ? [['guarded', rest.at(-1)!]] : []),
  ] as Array<[string, Round[]]>;
  lines.push(
    `  CPU a request during each side's rounds (user + system, every thread): ${named.map(([n, rs]) => `${n} ${cpu(rs)}`).join(', ')}; bare fastify ${cpu(bareRuns)}`,
  );
  if (r.on.has('scoped'))
    lines.push(
      ...variantLine(
        'scoped key (send only, from_domains example.com), same daemon',
        rest.shift()!,
        phRuns,
        bareRuns,
        '',
      ),
    );
  if (r.on.has('guarded'))
    lines.push(
      ...variantLine(
        `guarded daemon (${GUARD_WORDS})`,
        rest.shift()!,
        phRuns,
        bareRuns,
        `; ${r.guardedStored} rows stored; peak ${r.peaks[1]} MiB`,
      ),
    );
  if (r.batch) {
    const batchRate = (accepted(r.batch.subject) * BATCH) / (r.batch.subject.length * SECONDS);
    const single = rate(r.batch.anchor);
    const batchFailed = r.batch.subject.reduce((a, x) => a + x.failed, 0);
    lines.push(
      `  batch: POST /api/v1/emails/batch of ${BATCH} messages, ${BATCH_CONNECTIONS} connections, 2 rounds alternating with the single send (${CONNECTIONS} connections)`,
      `  batch accepted/s ${fmt(batchRate)}  (worst p99 ${fmt(p99(r.batch.subject), 1)} ms per batch, ${batchFailed} not 2xx); single beside it ${fmt(single)} accepted/s; ratio batch / single ${fmt(batchRate / single, 2)}`,
    );
  }
  lines.push(memoryLine(r.peaks[0]!, r.idle));
  return lines;
}
