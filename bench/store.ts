// bench/store: the two store engines side by side, in one run, on one machine. PostgreSQL is a
// private cluster with fsync on (as durable as SQLite's synchronous = FULL), on loopback.
//   accept: the same daemon on SQLite and on PostgreSQL, wrk in alternating rounds (goal: PostgreSQL >= 0.5 x SQLite)
//   drain: N queued 2 KB messages delivered to a loopback smtp-sink by each (goal: PostgreSQL >= 0.7 x SQLite)
//   claims: one claim of 1,000 with 1,000 and with 1,000,000 recipients queued on PostgreSQL (goal: flat)
// Beside each PostgreSQL figure: the database server's own CPU (every process of the cluster).

import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { fullGrant } from '../src/domain/key-scopes.js';
import { pgStore } from '../src/store/pg/index.js';
import { type PgCluster, startPgCluster } from '../support/postgres.js';
import {
  alternate,
  daemonArgs,
  fixedPort,
  fmt,
  httpLoad,
  type LoadResult,
  type MachineCpu,
  machineCpu,
  machineLine,
  memoryLine,
  memoryOf,
  processCpu,
  spawnReady,
  stop,
  workDir,
} from './lib.js';
import { benchMessage, queueMessages, sinkRig } from './sink-rig.js';

const N = Number(process.env.BENCH_STORE_N ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SINK_PORT = fixedPort(24035);

/**
 * CPU seconds of every process of a cluster: the postmaster's own, its children's now running, and
 * (cutime, cstime) those of the children that have ended, such as a daemon's closed connections.
 */
export function clusterCpu(c: PgCluster): number {
  const master = Number(readFileSync(join(c.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  let total = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)!.split(' ');
      if (Number(pid) === master) total += (Number(fields[13]) + Number(fields[14])) / 100 + processCpu(master);
      else if (Number(fields[1]) === master) total += processCpu(Number(pid));
    } catch {
      // ended meanwhile
    }
  }
  return total;
}

/** A PostgreSQL store with the default customer, a production key and the verified sender domain example.com. */
export async function pgRig(
  cluster: PgCluster,
  name: string,
): Promise<{ url: string; key: { id: string; key: string } }> {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = cluster.url.replace(/\/postgres$/, `/${name}`);
  const s = pgStore(url, { max: 2 });
  const now = Date.now();
  await s.admin.migrate(now);
  await s.customers.ensureDefault(now);
  const key = await s.keys.create({ grant: fullGrant(), customerId: 1, kind: 'production', name: 'bench', now });
  await s.domains.setVerified(
    (await s.domains.add({ customerId: 1, name: 'example.com', receiving: false, now })).id,
    now,
  );
  await s.admin.close();
  return { url, key: { id: key.id, key: key.key } };
}

/** Queues `n` of the benchmarks' messages straight into PostgreSQL, as the API stores them (one statement), numbered from `first` + 1. */
export async function queuePg(url: string, apiKeyId: string, n: number, first = 0): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const request = Buffer.from(JSON.stringify(benchMessage('rcpt@sink.test')));
  const now = Date.now();
  await c.query(
    `WITH m AS (
       INSERT INTO messages (customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, request, created_at)
       SELECT 1, 'bench' || i || '@example.com', $1, 0, 'bench@example.com', 'example.com', 'bench', '{}', $2, $3 FROM generate_series($5 + 1, $5 + $4) AS i RETURNING id, message_id)
     INSERT INTO recipients (message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, created_at, updated_at)
     SELECT id, 1, 'rcpt' || split_part(split_part(message_id, '@', 1), 'bench', 2) || '@sink.test', 'sink.test', 'to', 'queued', 0, $3, $3, $3 FROM m`,
    [apiKeyId, request, now, n, first],
  );
  await c.end();
}

async function accept(cluster: PgCluster): Promise<string[]> {
  const rig = await sinkRig('store-accept', SINK_PORT, { outbound: ['hold = true'] });
  const { url, key: pgKey } = await pgRig(cluster, 'bench_accept');
  const body = JSON.stringify({
    from: 'Shop <orders@example.com>',
    to: 'alice@example.org',
    subject: 'Your order #1234',
    text_body: 'Thank you for your order. '.repeat(60),
  });
  const lite = await spawnReady(process.execPath, daemonArgs(rig.config), /API on http:\/\/127\.0\.0\.1:(\d+)/);
  const pgDaemon = await spawnReady(
    process.execPath,
    daemonArgs(mergeConfig(rig.config, url, 'pg-accept')),
    /API on http:\/\/127\.0\.0\.1:(\d+)/,
  );
  const load = (port: string, key: string, seconds: number) =>
    httpLoad(`http://127.0.0.1:${port}/api/v1/emails`, {
      connections: 50,
      seconds,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body,
    });
  let runs: { anchor: LoadResult[]; subject: LoadResult[] };
  let dbCpu = 0;
  let liteCpu = 0;
  let pgCpu = 0;
  let peak = 0;
  const machine = { lite: machineCpu(machineCpu()), pg: machineCpu(machineCpu()) };
  try {
    await load(lite.match[1]!, rig.key.key, 2);
    await load(pgDaemon.match[1]!, pgKey.key, 2);
    const cpu0 = clusterCpu(cluster);
    const lite0 = processCpu(lite.child.pid!);
    const pg0 = processCpu(pgDaemon.child.pid!);
    const timed = async (side: 'lite' | 'pg', run: () => Promise<LoadResult>) => {
      const m0 = machineCpu();
      const r = await run();
      const m = machineCpu(m0);
      machine[side] = {
        user: machine[side].user + m.user,
        kernel: machine[side].kernel + m.kernel,
        steal: machine[side].steal + m.steal,
      };
      return r;
    };
    runs = await alternate(
      ROUNDS,
      () => timed('lite', () => load(lite.match[1]!, rig.key.key, SECONDS)),
      () => timed('pg', () => load(pgDaemon.match[1]!, pgKey.key, SECONDS)),
    );
    dbCpu = clusterCpu(cluster) - cpu0;
    liteCpu = processCpu(lite.child.pid!) - lite0;
    pgCpu = processCpu(pgDaemon.child.pid!) - pg0;
    peak = memoryOf(pgDaemon.child.pid!).peak;
  } finally {
    await stop(lite.child);
    await stop(pgDaemon.child);
    await rig.close();
  }
  const rate = (rs: LoadResult[]) => rs.reduce((a, r) => a + r.requests, 0) / (rs.length * SECONDS);
  const pgAccepted = runs.subject.reduce((a, r) => a + r.requests, 0);
  const liteAccepted = runs.anchor.reduce((a, r) => a + r.requests, 0);
  const failed = [...runs.anchor, ...runs.subject].reduce((a, r) => a + r.failed, 0);
  return [
    `store accept: the same daemon on each engine, wrk, 50 connections, ~1.7 KB JSON, queue held; ${ROUNDS} rounds of ${SECONDS} s each, alternating`,
    `  SQLite       ${fmt(rate(runs.anchor))} accepted/s  (posthaste CPU ${fmt((liteCpu * 1000) / Math.max(1, liteAccepted), 2)} ms a message)`,
    `  PostgreSQL   ${fmt(rate(runs.subject))} accepted/s  (posthaste CPU ${fmt((pgCpu * 1000) / Math.max(1, pgAccepted), 2)} ms, database server CPU ${fmt((dbCpu * 1000) / Math.max(1, pgAccepted), 2)} ms a message; ${failed} not 2xx)`,
    `  ratio PostgreSQL / SQLite  ${fmt(rate(runs.subject) / rate(runs.anchor), 2)}  (goal >= 0.5; rounds: ${runs.subject.map((r, i) => fmt(r.perSecond / runs.anchor[i]!.perSecond, 2)).join(', ')})`,
    machineLine(1, [
      { label: 'SQLite', cpu: perMessage(machine.lite, liteAccepted) },
      { label: 'PostgreSQL', cpu: perMessage(machine.pg, pgAccepted) },
    ]),
    memoryLine(peak).replace('posthaste memory', 'posthaste on PostgreSQL, memory'),
  ];
}

function perMessage(cpu: MachineCpu, n: number): MachineCpu {
  const k = 1 / Math.max(1, n);
  return { user: cpu.user * k, kernel: cpu.kernel * k, steal: cpu.steal };
}

/** The SQLite rig's configuration with [store] url set (the same listeners on port 0, the same sink). */
function mergeConfig(config: string, url: string, name: string): string {
  const text = readFileSync(config, 'utf8').replace(
    /data_dir = "([^"]+)"/,
    (_m, d: string) => `data_dir = "${d}-${name}"`,
  );
  const path = config.replace(/\.toml$/, `-${name}.toml`);
  writeFileSync(path, `${text}[store]\nurl = "${url}"\npool_size = 10\n`);
  return path;
}

async function drain(cluster: PgCluster): Promise<string[]> {
  const rig = await sinkRig('store-drain', SINK_PORT);
  const { url, key: pgKey } = await pgRig(cluster, 'bench_drain');
  const timeIt = async (config: string, left: () => Promise<number>) => {
    const t0 = performance.now();
    const d = await spawnReady(process.execPath, daemonArgs(config), /API on/);
    for (;;) {
      if ((await left()) === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (performance.now() - t0) / 1000;
    const peak = memoryOf(d.child.pid!).peak;
    await stop(d.child);
    return { seconds, peak };
  };
  try {
    queueMessages(rig.db, rig.key.id, N);
    const liteLeft = rig.db.sqlite
      .prepare("SELECT COUNT(*) FROM recipients WHERE state IN ('queued', 'deferred')")
      .pluck();
    const lite = await timeIt(rig.config, async () => liteLeft.get() as number);
    await queuePg(url, pgKey.id, N);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const cpu0 = clusterCpu(cluster);
    const pgSide = await timeIt(mergeConfig(rig.config, url, 'pg-drain'), async () =>
      Number((await c.query("SELECT count(*) AS n FROM recipients WHERE state IN ('queued', 'deferred')")).rows[0].n),
    );
    const dbCpu = clusterCpu(cluster) - cpu0;
    const delivered = Number(
      (await c.query("SELECT count(*) AS n FROM recipients WHERE state = 'delivered'")).rows[0].n,
    );
    await c.end();
    if (delivered !== N) throw new Error(`PostgreSQL delivered ${delivered} of ${N}`);
    return [
      `store drain: ${N} queued messages delivered to a loopback smtp-sink (DKIM on), the daemon's start included`,
      `  SQLite       ${fmt(N / lite.seconds)} msg/s  (${fmt(lite.seconds, 2)} s, peak ${lite.peak} MiB)`,
      `  PostgreSQL   ${fmt(N / pgSide.seconds)} msg/s  (${fmt(pgSide.seconds, 2)} s, peak ${pgSide.peak} MiB; database server CPU ${fmt((dbCpu * 1000) / N, 2)} ms a message)`,
      `  ratio PostgreSQL / SQLite  ${fmt(lite.seconds / pgSide.seconds, 2)}  (goal >= 0.7)`,
    ];
  } finally {
    await rig.close();
  }
}

/** One claim of 1,000 (and its release) on PostgreSQL, with `size` recipients queued: mean milliseconds of 50 after 3. */
async function claimMs(cluster: PgCluster, size: number): Promise<number> {
  const name = `bench_claims_${size}`;
  const { url, key } = await pgRig(cluster, name);
  await queuePg(url, key.id, size);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('VACUUM ANALYZE');
  await c.end();
  const s = pgStore(url, { max: 2 });
  let total = 0;
  const now = Date.now() + 1000;
  for (let r = 0; r < 53; r++) {
    const t0 = performance.now();
    const claimed = await s.delivery.claim('bench', now, 1000);
    if (r >= 3) total += performance.now() - t0;
    if (claimed.length !== Math.min(1000, size)) throw new Error(`claimed ${claimed.length}`);
    await s.delivery.releaseClaims(claimed.map((x) => x.recipient.id));
  }
  await s.admin.close();
  return total / 50;
}

export async function benchStore(): Promise<{ lines: string[] }> {
  const cluster = await startPgCluster({ durable: true });
  try {
    const lines = [...(await accept(cluster)), ...(await drain(cluster))];
    const small = await claimMs(cluster, 1000);
    const large = await claimMs(cluster, 1_000_000);
    lines.push(
      'store claims on PostgreSQL: one claim of 1,000 due recipients (SKIP LOCKED, claims recorded, messages loaded, then released), mean of 50 after 3',
      `  1,000 queued       ${fmt(small, 2)} ms per claim`,
      `  1,000,000 queued   ${fmt(large, 2)} ms per claim`,
      `  ratio large / small  ${fmt(large / small, 2)}  (goal: flat, about 1)`,
    );
    return {
      lines: [
        `store: PostgreSQL ${(await serverVersion(cluster)) ?? ''} (private cluster, fsync on) beside SQLite, work dir ${workDir('store')}`,
        ...lines,
      ],
    };
  } finally {
    cluster.remove();
  }
}

async function serverVersion(cluster: PgCluster): Promise<string | undefined> {
  const c = new pg.Client({ connectionString: cluster.url });
  await c.connect();
  const v = (await c.query('SHOW server_version')).rows[0]?.server_version as string | undefined;
  await c.end();
  return v;
}
