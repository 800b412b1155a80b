// bench/accept: accepted messages per second through POST /api/v1/emails (50 connections, bounded),
// beside a bare fastify server answering 202 to the same JSON, and the single-row
// synchronous=FULL commit rate of better-sqlite3 on the same disk. All in one run.
import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { ROOT, workDir, spawnReady, stop, httpLoad, fmt } from './lib.js';
import { openDb, migrate } from '../src/store/db.js';
import { ensureDefaultCustomer } from '../src/store/customers.js';
import { createKey } from '../src/store/keys.js';
import { addDomain, setVerified } from '../src/store/domains.js';
import { TestDnsServer } from '../test/helpers/dns-server.js';

export interface AcceptFigures {
  posthastePerSecond: number;
  barePerSecond: number;
  commitsPerSecond: number;
  lines: string[];
}

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 50;

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
  const key = createKey(db, { customerId: 1, kind: 'production', name: 'bench', now: Date.now() }).key;
  const d = addDomain(db, { customerId: 1, name: 'example.com', receiving: false, now: Date.now() });
  setVerified(db, d.id, Date.now());
  db.close();
  const config = join(dir, 'posthaste.toml');
  // The accept path alone: the queue is held (outbound.hold), so delivery (bench/deliver) does not
  // share the 2 cores; the DNS server on loopback keeps every lookup on the machine all the same.
  const dns = await new TestDnsServer().start();
  writeFileSync(config, `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[outbound]\nhold = true\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`);

  const body = JSON.stringify({
    from: 'Shop <orders@example.com>',
    to: 'alice@example.org',
    subject: 'Your order #1234',
    text_body: 'Thank you for your order. '.repeat(60),
    metadata: { order: '1234' },
  });
  const headers = { 'content-type': 'application/json', authorization: `Token ${key}` };

  const bare = await spawnReady(process.execPath, [join(ROOT, 'dist/bench/bare-fastify.js')], /LISTENING (\d+)/);
  const bareRun = await httpLoad(`http://127.0.0.1:${bare.match[1]}/api/v1/emails`, { connections: CONNECTIONS, seconds: SECONDS, headers, body });
  await stop(bare.child);

  const ph = await spawnReady(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, 'prof')}`] : []), join(ROOT, 'bin/posthaste.js'), '--config', config, 'serve'], /API on http:\/\/127\.0\.0\.1:(\d+)/);
  const phRun = await httpLoad(`http://127.0.0.1:${ph.match[1]}/api/v1/emails`, { connections: CONNECTIONS, seconds: SECONDS, headers, body });
  await stop(ph.child);
  await dns.stop();

  const check = openDb(dataDir);
  const stored = (check.sqlite.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n;
  check.close();
  if (stored < phRun.requests) throw new Error(`only ${stored} messages stored for ${phRun.requests} 202s`);

  const commits = singleRowCommitRate(dir, 3);
  const lines = [
    `accept: wrk, ${CONNECTIONS} connections, ${SECONDS} s each, ~1.7 KB JSON body, queue held (accept path only)`,
    `  posthaste POST /api/v1/emails   ${fmt(phRun.perSecond)} accepted/s  (p99 ${fmt(phRun.p99ms, 1)} ms, ${phRun.failed} not 2xx, socket errors: ${phRun.socketErrors}, ${stored} rows stored)`,
    `  bare fastify 202 (anchor)       ${fmt(bareRun.perSecond)} req/s  (p99 ${fmt(bareRun.p99ms, 1)} ms)`,
    `  SQLite single-row FULL commits  ${fmt(commits)} commits/s (same disk)`,
    `  ratio posthaste / bare fastify  ${fmt(phRun.perSecond / bareRun.perSecond, 2)}  (goal >= 0.5)`,
    `  ratio posthaste / single commit ${fmt(phRun.perSecond / commits, 2)}  (>1 only with group commit)`,
  ];
  return { posthastePerSecond: phRun.perSecond, barePerSecond: bareRun.perSecond, commitsPerSecond: commits, lines };
}
