// bench/accept: accepted messages per second through POST /api/v1/emails (50 connections, bounded),
// beside a bare fastify server answering 202 to the same JSON, and the single-row
// synchronous=FULL commit rate of better-sqlite3 on the same disk. All in one run.
//
// Both servers are up together and measured in alternating rounds (after a warm-up round each
// that is not counted), so a change in the machine's speed during the run (this VM's bare
// fastify figure alone moved between 14.7k and 30k req/s from one minute to the next) falls on
// both sides alike instead of on whichever ran at the wrong moment.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { fullGrant } from '../src/domain/key-scopes.js';
import { ensureDefaultCustomer } from '../src/store/sqlite/customers.js';
import { migrate, openDb } from '../src/store/sqlite/db.js';
import { addDomain, setVerified } from '../src/store/sqlite/domains.js';
import { createKey } from '../src/store/sqlite/keys.js';
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

export interface AcceptFigures {
  posthastePerSecond: number;
  barePerSecond: number;
  commitsPerSecond: number;
  lines: string[];
}

/** Seconds of each measured round; ROUNDS rounds per server, alternating which goes first. */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const WARMUP_SECONDS = 2;
const CONNECTIONS = 50;
const BATCH = 50;
const BATCH_CONNECTIONS = 10;

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

export async function benchAccept(): Promise<AcceptFigures> {
  const dir = workDir('accept');
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
  const d = addDomain(db, { customerId: 1, name: 'example.com', receiving: false, now: Date.now() });
  setVerified(db, d.id, Date.now());
  db.close();
  const config = join(dir, 'posthaste.toml');
  // The accept path alone: the queue is held (outbound.hold), so delivery (bench/deliver) does not
  // share the 2 cores; the DNS server on loopback keeps every lookup on the machine all the same.
  const dns = await new TestDnsServer().start();
  writeFileSync(
    config,
    `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n[outbound]\nhold = true\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`,
  );

  const body = JSON.stringify({
    from: 'Shop <orders@example.com>',
    to: 'alice@example.org',
    subject: 'Your order #1234',
    text_body: 'Thank you for your order. '.repeat(60),
    metadata: { order: '1234' },
  });
  const headers = { 'content-type': 'application/json', authorization: `Token ${key}` };

  const bare = await spawnReady(process.execPath, [join(ROOT, 'dist/bench/bare-fastify.js')], /LISTENING (\d+)/);
  const ph = await spawnReady(
    process.execPath,
    daemonArgs(config, join(dir, 'prof')),
    /API on http:\/\/127\.0\.0\.1:(\d+)/,
  );
  const idle = await idleMemory(ph.child.pid!);
  let peak = 0;
  const urls = {
    bare: `http://127.0.0.1:${bare.match[1]}/api/v1/emails`,
    ph: `http://127.0.0.1:${ph.match[1]}/api/v1/emails`,
  };
  const load = (url: string, seconds: number) => httpLoad(url, { connections: CONNECTIONS, seconds, headers, body });
  // The same message, BATCH at a time, through POST /api/v1/emails/batch: fewer connections, as
  // a batch is one request of BATCH messages.
  const batchBody = `[${Array.from({ length: BATCH }, () => body).join(',')}]`;
  const batchLoad = (seconds: number) =>
    httpLoad(urls.ph + '/batch', { connections: BATCH_CONNECTIONS, seconds, headers, body: batchBody });
  let warmup: LoadResult;
  let runs: { anchor: LoadResult[]; subject: LoadResult[] };
  let batchRuns: { anchor: LoadResult[]; subject: LoadResult[] };
  try {
    warmup = await load(urls.ph, WARMUP_SECONDS);
    await load(urls.bare, WARMUP_SECONDS);
    runs = await alternate(
      ROUNDS,
      () => load(urls.bare, SECONDS),
      () => load(urls.ph, SECONDS),
    );
    await batchLoad(WARMUP_SECONDS);
    batchRuns = await alternate(
      2,
      () => load(urls.ph, SECONDS),
      () => batchLoad(SECONDS),
    );
    peak = memoryOf(ph.child.pid!).peak;
  } finally {
    await stop(bare.child);
    await stop(ph.child);
    await dns.stop();
  }
  const { anchor: bareRuns, subject: phRuns } = runs;
  const batchAccepted = batchRuns.subject.reduce((a, r) => a + r.requests, 0) * BATCH;
  const phAccepted =
    warmup.requests +
    phRuns.reduce((a, r) => a + r.requests, 0) +
    batchRuns.anchor.reduce((a, r) => a + r.requests, 0) +
    batchAccepted;

  const check = openDb(dataDir);
  const stored = (check.sqlite.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n;
  check.close();
  if (stored < phAccepted) throw new Error(`only ${stored} messages stored for ${phAccepted} 202s`);

  const rate = (runs: LoadResult[]) => runs.reduce((a, r) => a + r.requests, 0) / (runs.length * SECONDS);
  const phRate = rate(phRuns);
  const bareRate = rate(bareRuns);
  const roundRatios = phRuns.map((r, i) => r.perSecond / bareRuns[i]!.perSecond);
  const p99 = (runs: LoadResult[]) => Math.max(...runs.map((r) => r.p99ms));
  const failed = phRuns.reduce((a, r) => a + r.failed, 0);
  const socketErrors = phRuns.map((r) => r.socketErrors).filter((e) => e !== 'none');
  const commits = singleRowCommitRate(dir, 3);
  const singleBeside = rate(batchRuns.anchor);
  const batchRate = batchAccepted / (batchRuns.subject.length * SECONDS);
  const batchFailed = batchRuns.subject.reduce((a, r) => a + r.failed, 0);
  const lines = [
    `accept: wrk, ${CONNECTIONS} connections, ~1.7 KB JSON body, queue held (accept path only); ${ROUNDS} rounds of ${SECONDS} s per server, alternating, after ${WARMUP_SECONDS} s of warm-up each`,
    `  posthaste POST /api/v1/emails   ${fmt(phRate)} accepted/s  (worst p99 ${fmt(p99(phRuns), 1)} ms, ${failed} not 2xx, socket errors: ${socketErrors.length ? socketErrors.join('; ') : 'none'}, ${stored} rows stored)`,
    `  bare fastify 202 (anchor)       ${fmt(bareRate)} req/s  (worst p99 ${fmt(p99(bareRuns), 1)} ms)`,
    `  SQLite single-row FULL commits  ${fmt(commits)} commits/s (same disk)`,
    `  ratio posthaste / bare fastify  ${fmt(phRate / bareRate, 2)}  (goal >= 0.5; rounds: ${roundRatios.map((r) => fmt(r, 2)).join(', ')})`,
    `  rounds, accepted/s: ${phRuns.map((r) => fmt(r.perSecond)).join(', ')}; bare req/s: ${bareRuns.map((r) => fmt(r.perSecond)).join(', ')}`,
    `  ratio posthaste / single commit ${fmt(phRate / commits, 2)}  (>1 only with group commit)`,
    `  batch: POST /api/v1/emails/batch of ${BATCH} messages, ${BATCH_CONNECTIONS} connections, 2 rounds alternating with the single send (${CONNECTIONS} connections)`,
    `  batch accepted/s ${fmt(batchRate)}  (worst p99 ${fmt(p99(batchRuns.subject), 1)} ms per batch, ${batchFailed} not 2xx); single beside it ${fmt(singleBeside)} accepted/s; ratio batch / single ${fmt(batchRate / singleBeside, 2)}`,
    memoryLine(peak, idle),
  ];
  return { posthastePerSecond: phRate, barePerSecond: bareRate, commitsPerSecond: commits, lines };
}
