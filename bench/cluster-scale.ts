// bench/cluster-scale: does a cluster grow with its machines? N nodes (1, 2, 4; 8 at a smaller
// cap) on one PostgreSQL, each `posthaste serve` in a cgroup of its own capped at a fraction of a
// core (bench/cgroup.ts), standing for nodes on machines of their own; PostgreSQL, the receiving
// smtp-sink and the load generators (wrk) outside the caps, as a database server and clients
// on other machines would be. A fresh database for each size, the same work each time.
//   accept: wrk on every node at once, queue held; the rate, and each node's efficiency against one
//   idle: while node 1 alone accepts at full speed, the CPU each other node spends (a share of a core);
//   node 1 accepts alone so at every size, one node included; before it, every node accepts
//   for BENCH_SCALE_WARM_S (8 s) with its cap lifted, one node after the other (capped, a node takes
//   many seconds to compile its accept path, and a cold side would be measured slower), then all
//   of them at once, capped, for BENCH_SCALE_SETTLE_S (8 s), untimed (the first seconds under a
//   cap after the warm-up run slower: each node gets them before anything is measured)
//   drain: BENCH_SCALE_DRAIN_N queued 2 KB messages delivered (DKIM on) by all the nodes, after
//   BENCH_SCALE_WARM_N (3,000) a node delivered untimed, caps lifted (each node's warm-up: its JIT, its
//   connections; after 500, a node at 0.2 of a core still ran a third slower for its first 15 s capped)
//   separate (a size written "4s"): the control, N one-node installations side by side, each on a
//   database of its own in the same PostgreSQL, sharing the machine as the cluster's nodes do but
//   not one row, claim or wakeup: the cluster against it is what coordination costs, apart from
//   what sharing this machine costs (which nodes on machines of their own would not pay)
// Beside each rate: CPU a message of the nodes (all of them, /proc, with the kernel's part) and of
// PostgreSQL (every process of its cluster, the benchmark's own progress queries included: one
// every 200 ms), statements a message (pg_stat_statements, this database's, the benchmark's own
// left out), and how long the nodes' groups were throttled (cpu.stat, summed over the CPUs). A
// side whose nodes used less than their caps (rate times CPU a message against N caps) was held
// back by something outside the caps (PostgreSQL, the machine), not by the nodes' CPU.
// What the caps cannot show: the nodes still share this machine's memory bandwidth, caches and
// kernel, and PostgreSQL shares its cores with the sink, the load and with other users of the
// machine; a cap is a quota per 100 ms, not a slower core (a node runs at full speed, then
// waits), which lengthens a node's latency, not only its throughput.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { startPgCluster } from '../support/postgres.js';
import { type CpuCap, cpuCaps } from './cgroup.js';
import { nodeConfigs } from './cluster.js';
import { daemonArgs, fixedPort, fmt, httpLoad, median, processCpuTimes, spawnReady, stop } from './lib.js';
import { sinkRig } from './sink-rig.js';
import { clusterCpu, pgRig, queuePg } from './store.js';

const CAP = Number(process.env.BENCH_SCALE_CAP ?? 0.2);
/** Sizes: "1,2,4,4s,8:0.1" (a size with its own cap after a colon; "s": that many separate one-node installations, the control). */
const SIZES = (process.env.BENCH_SCALE_NODES ?? '1,2,4').split(',').map((s) => {
  const [n, cap] = s.split(':');
  return { nodes: Number.parseInt(n!, 10), cap: cap ? Number(cap) : CAP, separate: n!.endsWith('s') };
});
const PHASES = new Set((process.env.BENCH_SCALE_PHASES ?? 'accept,drain').split(','));
/** Seconds each accept side is timed (with 8, one node timed twice in a row moved by 20 % between the two). */
const SECONDS = Number(process.env.BENCH_SCALE_SECONDS ?? 20);
const DRAIN_N = Number(process.env.BENCH_SCALE_DRAIN_N ?? 8000);
/**
 * Messages a node delivers, uncapped, before the drain is timed (its warm-up). After 500, one node
 * at 0.2 of a core, at its cap throughout, delivered about a third slower for its first 15 s than
 * after (a 16,000-message drain); after 4,000 it ran at one rate from its second second.
 */
const WARM_N = Number(process.env.BENCH_SCALE_WARM_N ?? 3000);
/** Seconds every node accepts, uncapped, before anything is measured (its JIT: capped, a node takes many seconds to compile its accept path). */
const WARM_S = Number(process.env.BENCH_SCALE_WARM_S ?? 8);
/** Seconds every node accepts, capped, all at once, after the warm-up and before anything is timed. */
const SETTLE_S = Number(process.env.BENCH_SCALE_SETTLE_S ?? 8);
/** wrk's connections to each node. */
const CONNECTIONS = Number(process.env.BENCH_SCALE_CONNECTIONS ?? 16);
/** A drain that takes longer than this fails (the benchmark is bounded). */
const LIMIT_S = Number(process.env.BENCH_SCALE_LIMIT_S ?? 300);
/** With BENCH_SCALE_TOP set, the statements run most a message, this many, after each side. */
const TOP = Number(process.env.BENCH_SCALE_TOP ?? 0);
const SINK_PORT = fixedPort(24037);

const body = JSON.stringify({
  from: 'Shop <orders@example.com>',
  to: 'rcpt@sink.test',
  subject: 'Your order #1234',
  text_body: 'Thank you for your order. '.repeat(60),
});

interface Side {
  nodes: number;
  cap: number;
  /** N one-node installations side by side (each its own database), not one cluster. */
  separate: boolean;
  load: string;
  rate: number;
  nodeMs: number;
  /** Of nodeMs, what the kernel spent on the nodes' behalf (their system time: sockets, mostly). */
  kernelMs: number;
  dbMs: number;
  statements: number;
  throttled: number;
  top: string[];
  /** accept: what each idle node spent while node 1 alone accepted (shares of a core; none at one node), and node 1's rate then. */
  idle?: { shares: number[]; rate: number };
  /** accept: requests answered other than 2xx (wrk's count), left out of the rate. */
  failed?: number;
  /** drain: the rate after the first tenth. */
  rest?: number;
  /** drain: the rates of the two halves of what followed the first tenth (far apart, the nodes were still warming up). */
  halves?: [number, number];
}

type Daemon = Awaited<ReturnType<typeof spawnReady>>;

export async function benchClusterScale(): Promise<{ lines: string[] }> {
  const caps = cpuCaps();
  const cluster = await startPgCluster({
    durable: true,
    settings: ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'],
  });
  const rig = await sinkRig('cluster-scale', SINK_PORT);
  const live = new Set<Daemon>();
  const interrupted = () => {
    for (const d of live) d.child.kill('SIGKILL');
    caps.remove();
    cluster.remove();
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const sides: Side[] = [];
  try {
    for (const size of SIZES) {
      for (const phase of ['accept', 'drain'] as const) {
        if (!PHASES.has(phase)) continue;
        const side = await runSide(phase, size, { caps, cluster, rig, admin, live });
        sides.push(side);
        console.log(sideLine(side, sides));
      }
    }
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    for (const d of live) await stop(d.child);
    caps.remove();
    await admin.end();
    await rig.close();
    cluster.remove();
  }
  return {
    lines: [
      `cluster scale: each node in a cgroup of its own capped at ${CAP} of a core (nodes on machines of their own), PostgreSQL (fsync on), the smtp-sink and wrk outside the caps; a fresh database for each size. accept: wrk, ${CONNECTIONS} connections a node, ${SECONDS} s, queue held, after ${WARM_S} s a node uncapped and ${SETTLE_S} s capped; drain: ${DRAIN_N} queued 2 KB messages, DKIM on, after ${WARM_N} a node untimed`,
      ...sides.map((s) => sideLine(s, sides)),
    ],
  };
}

type Ctx = {
  caps: CpuCap;
  cluster: Awaited<ReturnType<typeof startPgCluster>>;
  rig: Awaited<ReturnType<typeof sinkRig>>;
  admin: pg.Client;
  live: Set<Daemon>;
};

const say = (what: string) => {
  if (process.env.BENCH_SCALE_VERBOSE) console.error(`${new Date().toISOString()} ${what}`);
};

async function runSide(
  phase: 'accept' | 'drain',
  size: { nodes: number; cap: number; separate: boolean },
  ctx: Ctx,
): Promise<Side> {
  const { nodes, cap, separate } = size;
  const name = `${phase} ${nodes}${separate ? ' separate' : ''} at ${cap}`;
  say(`${name}: starting`);
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const db = `bench_scale_${phase}_${nodes}${separate ? 's' : ''}_${String(cap).replace('.', '_')}`;
  const tag = `${phase}-${nodes}${separate ? 's' : ''}-${cap}`;
  const add = ['concurrency = 4', 'concurrency_per_domain = 4', 'claim_batch = 100', 'signing_threads = 1'];
  // One database for the cluster's nodes; one each for separate installations (node i uses store i).
  const stores: Store[] = [];
  try {
    const configs: ReturnType<typeof nodeConfigs> = [];
    for (let i = 0; i < (separate ? nodes : 1); i++) {
      const name = separate ? `${db}_${i}` : db;
      const { url, key } = await pgRig(ctx.cluster, name);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      stores.push({ name, url, key, client });
      const t = separate ? `${tag}-${i}` : tag;
      configs.push(
        ...nodeConfigs(ctx.rig.config, t, separate ? 1 : nodes, { outbound: add, store: [`url = "${url}"`] }),
      );
    }
    const storeOf = (i: number) => stores[separate ? i : 0]!;
    const groups = configs.map((_c, i) => `${tag}-${i}`);
    const daemons = await Promise.all(
      configs.map(async (c, i) => {
        // Started with the cap lifted (a node capped at a small share takes long to start; its
        // start is not measured), capped once every node is up.
        const w = ctx.caps.wrap(groups[i]!, null, process.execPath, daemonArgs(c.path, `${ctx.rig.dir}/prof`));
        const d = await spawnReady(w.cmd, w.args, /API on http:\/\/127\.0\.0\.1:(\d+)/);
        ctx.live.add(d);
        if (process.env.BENCH_SCALE_VERBOSE)
          for (const s of [d.child.stdout!, d.child.stderr!])
            s.on('data', (b: Buffer) => process.stderr.write(`[node ${i + 1}] ${b}`));
        return d;
      }),
    );
    say(`${name}: nodes ready, API on ports ${daemons.map((d) => d.match[1]).join(' ')}`);
    for (const g of groups) ctx.caps.limit(g, cap);
    try {
      const dbs = stores.map((s) => s.name);
      const m = {
        cpu: () => daemons.map((d) => processCpuTimes(d.child.pid!)),
        db: () => clusterCpu(ctx.cluster),
        statements: async () => statements(ctx.admin, dbs),
        throttled: () => groups.reduce((s, g) => s + ctx.caps.throttled(g).seconds, 0),
        waits: async () =>
          (
            await ctx.admin.query(
              "SELECT wait_event_type || ':' || wait_event AS w FROM pg_stat_activity WHERE datname = ANY($1) AND state = 'active' AND wait_event IS NOT NULL",
              [dbs],
            )
          ).rows.map((r: { w: string }) => r.w),
        uncapped: async <T>(run: () => Promise<T>): Promise<T> => {
          for (const g of groups) ctx.caps.limit(g, null);
          try {
            return await run();
          } finally {
            for (const g of groups) ctx.caps.limit(g, cap);
          }
        },
        count: async (sql: string) => {
          const ns = await Promise.all(stores.map(async (s) => Number((await s.client.query(sql)).rows[0].n)));
          return ns.reduce((a, b) => a + b, 0);
        },
      };
      const side =
        phase === 'accept'
          ? await acceptSide(
              daemons.map((d, i) => ({ d, key: storeOf(i).key.key })),
              m,
            )
          : await drainSide(daemons, configs, m, stores);
      return { nodes, cap, separate, load, ...side };
    } finally {
      await Promise.all(
        daemons.map(async (d) => {
          await stop(d.child);
          ctx.live.delete(d);
        }),
      );
    }
  } finally {
    for (const s of stores) await s.client.end();
  }
}

/** A side's database: the cluster's one, or one of each separate installation's. */
type Store = { name: string; url: string; key: { id: string; key: string }; client: pg.Client };

type Meters = {
  /** Each node's CPU seconds so far, with the kernel's part. */
  cpu: () => Array<{ seconds: number; kernel: number }>;
  db: () => number;
  statements: () => Promise<Map<string, number>>;
  throttled: () => number;
  /** What this database's backends are waiting on now, one entry each (pg_stat_activity). */
  waits: () => Promise<string[]>;
  /** Runs an untimed warm-up with the nodes' caps lifted, then caps them again. */
  uncapped: <T>(run: () => Promise<T>) => Promise<T>;
  /** A count (a query answering one row with `n`) summed over the side's databases. */
  count: (sql: string) => Promise<number>;
};

const wrk = (d: Daemon, key: string, seconds: number) =>
  httpLoad(`http://127.0.0.1:${d.match[1]}/api/v1/emails`, {
    connections: CONNECTIONS,
    seconds,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });

/** What was spent between two readings, per message. */
async function measure<T>(m: Meters, messages: () => Promise<number>, run: () => Promise<T>) {
  const cpu0 = m.cpu();
  const db0 = m.db();
  const st0 = await m.statements();
  const th0 = m.throttled();
  const t0 = performance.now();
  const waits = new Map<string, number>();
  let sampling = TOP > 0;
  const sample = (async () => {
    while (sampling) {
      for (const w of await m.waits()) waits.set(w, (waits.get(w) ?? 0) + 1);
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  const out = await run().finally(() => {
    sampling = false;
  });
  await sample;
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = m.cpu();
  const cpu = cpu1.map((x, i) => x.seconds - cpu0[i]!.seconds);
  const kernel = cpu1.reduce((s, x, i) => s + x.kernel - cpu0[i]!.kernel, 0);
  const db = m.db() - db0;
  const st = await m.statements();
  const n = Math.max(1, await messages());
  const calls = [...st].map(([q, k]) => [q, k - (st0.get(q) ?? 0)] as const).sort((a, b) => b[1] - a[1]);
  return {
    out,
    seconds,
    cpu,
    n,
    nodeMs: (cpu.reduce((a, b) => a + b, 0) * 1000) / n,
    kernelMs: (kernel * 1000) / n,
    dbMs: (db * 1000) / n,
    statements: calls.reduce((a, [, k]) => a + k, 0) / n,
    throttled: m.throttled() - th0,
    top: [
      ...calls.slice(0, TOP).map(([q, k]) => `${fmt(k / n, 3)}  ${q.replace(/\s+/g, ' ').slice(0, 140)}`),
      `waits (backends seen waiting, every 100 ms): ${[...waits]
        .sort((a, b) => b[1] - a[1])
        .map(([w, k]) => `${w} ${k}`)
        .join(', ')}`,
    ],
  };
}

async function acceptSide(nodes: Array<{ d: Daemon; key: string }>, m: Meters) {
  const stored = () => m.count('SELECT count(*) AS n FROM messages /* bench-scale */');
  // Warm-up: every node's JIT and connections, not timed, uncapped, one node at a time, so that
  // each gets the same warm-up at every size (warmed together, four nodes would share the
  // machine's cores and each be measured colder than one node alone).
  await m.uncapped(async () => {
    for (const { d, key } of nodes) await wrk(d, key, WARM_S);
  });
  // Then capped, every node at once, untimed: a node's first seconds under its cap after the
  // warm-up run slower (node 1 measured alone then sent 10–50 % fewer a second than in the next
  // seconds), and every node, not node 1 alone, is to have had them at every size.
  if (SETTLE_S > 0) await Promise.all(nodes.map(({ d, key }) => wrk(d, key, SETTLE_S)));
  // Node 1 alone, at every size (its rate says whether the warm-up was enough: about the one-node
  // side's); with peers, what they spend meanwhile is the cost of being woken by a busy peer.
  const alone0 = await stored();
  const alone = await measure(
    m,
    async () => (await stored()) - alone0,
    () => wrk(nodes[0]!.d, nodes[0]!.key, SECONDS),
  );
  const idle: Side['idle'] = {
    shares: alone.cpu.slice(1).map((s) => s / alone.seconds),
    rate: alone.out.requests / SECONDS,
  };
  const before = await stored();
  const r = await measure(
    m,
    async () => (await stored()) - before,
    () => Promise.all(nodes.map(({ d, key }) => wrk(d, key, SECONDS))),
  );
  const accepted = r.out.reduce((a, x) => a + x.requests, 0);
  for (const [i, x] of r.out.entries())
    if (x.failed > 0 && process.env.BENCH_SCALE_VERBOSE) {
      const res = await fetch(`http://127.0.0.1:${nodes[i]!.d.match[1]}/api/v1/emails`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${nodes[i]!.key}` },
        body,
      });
      say(`node ${i + 1} answered ${x.failed} not 2xx; now: ${res.status} ${(await res.text()).slice(0, 300)}`);
    }
  say(
    `wrk by node (2xx/not): ${r.out.map((x) => `${x.requests}/${x.failed} ${x.socketErrors}`).join(', ')}; stored ${r.n}`,
  );
  const failed = r.out.reduce((a, x) => a + x.failed, 0);
  return { ...r, rate: accepted / SECONDS, failed, idle };
}

async function drainSide(daemons: Daemon[], configs: Array<{ release: () => void }>, m: Meters, stores: Store[]) {
  // Each installation its share of the messages (the cluster: all of them in its one database).
  const queue = (n: number, first: number) =>
    Promise.all(stores.map((s) => queuePg(s.url, s.key.id, n / stores.length, first / stores.length)));
  const left = () =>
    m.count("SELECT count(*) AS n FROM recipients WHERE state IN ('queued', 'deferred') /* bench-scale */");
  const until = async (t0: number, each?: (n: number) => void) => {
    for (;;) {
      const n = await left();
      each?.(n);
      if (n === 0) return;
      if (performance.now() - t0 > LIMIT_S * 1000) throw new Error(`drain not done in ${LIMIT_S} s (${n} left)`);
      await new Promise((res) => setTimeout(res, 200));
    }
  };
  // Warm-up, not timed, uncapped: WARM_N a node, so that each has compiled its delivery path and
  // opened its connections (a node pays that once in its life; N nodes would pay it N times in one
  // short drain, and capped, a node compiles slowly). Too short a warm-up favours the smaller
  // sizes: one node's long drain is timed mostly warm, four nodes' short one mostly not.
  const warm = WARM_N * daemons.length;
  if (DRAIN_N % stores.length)
    throw new Error(`BENCH_SCALE_DRAIN_N (${DRAIN_N}) is not shared evenly by ${stores.length} installations`);
  await queue(warm, 0);
  await m.uncapped(async () => {
    for (const [i, cfg] of configs.entries()) {
      cfg.release();
      daemons[i]!.child.kill('SIGHUP');
    }
    await until(performance.now());
  });
  let tenth: number | undefined;
  let half: number | undefined;
  const r = await measure(
    m,
    async () => DRAIN_N,
    async () => {
      const t0 = performance.now();
      await queue(DRAIN_N, warm);
      // As a node would after its commit: every node looks now.
      for (const s of stores) await s.client.query("SELECT pg_notify('posthaste_wakeup', 'outbound bench')");
      await until(t0, (n) => {
        if (tenth === undefined && n <= DRAIN_N * 0.9) tenth = performance.now();
        if (half === undefined && n <= DRAIN_N * 0.45) half = performance.now();
      });
      return performance.now();
    },
  );
  const delivered = await m.count("SELECT count(*) AS n FROM recipients WHERE state = 'delivered' /* bench-scale */");
  if (delivered !== DRAIN_N + warm)
    throw new Error(`${daemons.length} nodes delivered ${delivered} of ${DRAIN_N + warm}`);
  // The rest (after the first tenth) in two halves of 0.45 of the messages each.
  const [from, mid] = [tenth ?? r.out, half ?? r.out];
  return {
    ...r,
    rate: DRAIN_N / r.seconds,
    rest: (DRAIN_N * 0.9 * 1000) / (r.out - from),
    halves: [(DRAIN_N * 450) / (mid - from), (DRAIN_N * 450) / (r.out - mid)] as [number, number],
  };
}

/** Calls so far of each statement run in the databases `dbs` (pg_stat_statements). */
async function statements(admin: pg.Client, dbs: string[]): Promise<Map<string, number>> {
  const r = await admin.query(
    `SELECT query, sum(calls)::float8 AS calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE d.datname = ANY($1) AND query NOT LIKE '%bench-scale%' GROUP BY query`,
    [dbs],
  );
  return new Map(r.rows.map((x: { query: string; calls: number }) => [x.query, x.calls]));
}

function sideLine(s: Side, all: Side[]): string {
  const kind = s.rest === undefined ? 'accept' : 'drain';
  const same = (x: Side) => (x.rest === undefined) === (kind === 'accept');
  const one = all.find((x) => x.nodes === 1 && same(x));
  // Against one node at this cap; a size at another cap is compared with one node scaled to it.
  const eff =
    one && s.nodes > 1 ? (s.rest ?? s.rate) / (s.nodes * (one.rest ?? one.rate) * (s.cap / one.cap)) : undefined;
  // The cluster against as many separate installations at its cap: what coordination costs.
  const pair = all.find(
    (x) => x !== s && same(x) && x.nodes === s.nodes && x.cap === s.cap && x.separate !== s.separate,
  );
  const [cl, sep] = s.separate ? [pair, s] : [s, pair];
  const control =
    cl && sep && s.nodes > 1
      ? `; the cluster against separate installations: rate ${fmt((cl.rest ?? cl.rate) / (sep.rest ?? sep.rate), 2)}, nodes' CPU a message ${fmt(cl.nodeMs / sep.nodeMs, 2)}`
      : '';
  return [
    `  ${kind.padEnd(6)} ${String(s.nodes).padStart(2)} ${s.separate ? 'separate' : 'node(s)'} at ${s.cap}: ${fmt(s.rate)} msg/s`,
    s.rest !== undefined && s.halves
      ? ` (${fmt(s.rest)} after the first tenth: ${fmt(s.halves[0])} in its first half, ${fmt(s.halves[1])} in its second)`
      : '',
    s.failed ? ` (${s.failed} answers not 2xx left out)` : '',
    eff !== undefined ? `, efficiency ${fmt(eff, 2)}` : '',
    `; CPU a message: nodes ${fmt(s.nodeMs, 3)} ms (${fmt(s.kernelMs, 3)} in the kernel), PostgreSQL ${fmt(s.dbMs, 3)} ms; statements a message ${fmt(s.statements, 2)}; nodes throttled ${fmt(s.throttled, 1)} s`,
    s.idle ? `; node 1 alone before, ${fmt(s.idle.rate)}/s` : '',
    s.idle?.shares.length
      ? `, while the others spent ${s.idle.shares.map((x) => `${fmt(x * 100, 1)} %`).join(', ')} of a core (median ${fmt(median(s.idle.shares) * 100, 1)} %)`
      : '',
    control,
    `; load average ${s.load}`,
    ...s.top.map((t) => `\n      ${t}`),
  ].join('');
}
