// bench/cluster: several nodes on one PostgreSQL draining one queue, against one node, with the
// same connections in all (to the database and to the receiver). PostgreSQL is a private cluster
// with fsync on, the receiver a loopback smtp-sink, every daemon a process of its own.
//   drain: N queued 2 KB messages delivered (DKIM on) by one node, then by three (goal: three >= 0.9 x one)
// The daemons start with the queue held and are released together (SIGHUP): the time is the
// drain's, not the processes' start. The goal is judged on the rate after the first tenth is
// delivered: what the coordination costs, once each process has warmed up. Warming up (V8
// compiling the delivery path, the first connections to the database and the receiver, the
// first claims) is paid once by each process in its life, so three nodes pay it three times on
// these two cores in a drain of seconds; the whole drain's ratio is printed beside it.
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import pg from 'pg';
import { startPgCluster } from '../support/postgres.js';
import { daemonArgs, fixedPort, fmt, machineCpu, processCpu, spawnReady, stop } from './lib.js';
import { sinkRig } from './sink-rig.js';
import { clusterCpu, pgRig, queuePg } from './store.js';

const N = Number(process.env.BENCH_CLUSTER_N ?? 10_000);
const SINK_PORT = fixedPort(24036);
/** In all, whatever the number of nodes: PostgreSQL connections, and connections to the receiver. */
const POOL = 12;
const SMTP = 12;
/**
 * Recipients a node claims at once, on both sides: about what a node sends in a second here. With
 * the default (1,000), a node holds a fifth of this queue at once and the others run dry at the
 * end while it works through its last claim.
 */
const CLAIM_BATCH = Number(process.env.BENCH_CLUSTER_CLAIM ?? 200);
/** Signing threads per node: the machine's cores shared out (one node has them all; three on one machine share them), at least one each. */
const signers = (nodes: number) => Math.max(1, Math.round(cpus().length / nodes));

/**
 * The configuration files of `nodes` nodes made from a rig's (`config`, bench/sink-rig.ts): each
 * its own data directory and node name, the lines given added to [outbound] and [store], and the
 * queue held until `release` rewrites the file (the caller then sends SIGHUP).
 */
export function nodeConfigs(
  config: string,
  tag: string,
  nodes: number,
  add: { outbound: string[]; store: string[] },
): Array<{ path: string; release: () => void }> {
  const base = readFileSync(config, 'utf8');
  return Array.from({ length: nodes }, (_, i) => {
    const path = config.replace(/\.toml$/, `-${tag}-${i}.toml`);
    const text = (hold: boolean) =>
      base
        .replace(
          /data_dir = "([^"]+)"/,
          (_m, d: string) => `data_dir = "${d}-${tag}-${i}"\nnode_name = "bench${i + 1}"`,
        )
        .replace('[outbound]\n', `[outbound]\nhold = ${hold}\n${add.outbound.map((l) => `${l}\n`).join('')}`) +
      `[store]\n${add.store.map((l) => `${l}\n`).join('')}`;
    writeFileSync(path, text(true));
    return { path, release: () => writeFileSync(path, text(false)) };
  });
}

export async function benchCluster(): Promise<{ lines: string[] }> {
  const cluster = await startPgCluster({ durable: true });
  const rig = await sinkRig('cluster', SINK_PORT);
  try {
    const run = async (nodes: number, round: number) => {
      const { url, key } = await pgRig(cluster, `bench_cluster_${nodes}_${round}`);
      await queuePg(url, key.id, N);
      const configs = nodeConfigs(rig.config, `${nodes}-${round}`, nodes, {
        outbound: [
          `concurrency = ${SMTP / nodes}`,
          `concurrency_per_domain = ${SMTP / nodes}`,
          `claim_batch = ${CLAIM_BATCH}`,
          `signing_threads = ${signers(nodes)}`,
        ],
        store: [`url = "${url}"`, `pool_size = ${POOL / nodes}`],
      });
      const daemons = await Promise.all(configs.map((c) => spawnReady(process.execPath, daemonArgs(c.path), /API on/)));
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const nodesCpu = () => daemons.reduce((sum, d) => sum + processCpu(d.child.pid!), 0);
        const cpu0 = clusterCpu(cluster);
        const node0 = nodesCpu();
        const machine0 = machineCpu();
        const t0 = performance.now();
        for (const [i, cfg] of configs.entries()) {
          cfg.release();
          daemons[i]!.child.kill('SIGHUP');
        }
        // When the first tenth is delivered: the rest's rate leaves out each process's warm-up
        // (its JIT, its first connections and claims), which three nodes pay three times.
        let tenth: number | undefined;
        for (;;) {
          const left = Number(
            (await c.query("SELECT count(*) AS n FROM recipients WHERE state IN ('queued', 'deferred')")).rows[0].n,
          );
          if (tenth === undefined && left <= N * 0.9) tenth = performance.now();
          if (left === 0) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        const end = performance.now();
        const seconds = (end - t0) / 1000;
        const rest = (end - (tenth ?? t0)) / 1000;
        const dbCpu = clusterCpu(cluster) - cpu0;
        const nodeCpu = nodesCpu() - node0;
        const m = machineCpu(machine0);
        const delivered = Number(
          (await c.query("SELECT count(*) AS n FROM recipients WHERE state = 'delivered'")).rows[0].n,
        );
        if (delivered !== N) throw new Error(`${nodes} nodes delivered ${delivered} of ${N}`);
        return { seconds, rest, dbCpu, nodeCpu, busy: (m.user + m.kernel) / seconds };
      } finally {
        await c.end();
        await Promise.all(daemons.map((d) => stop(d.child)));
      }
    };
    // One, three, one, three: the better of each (a loaded machine slows one round, not a side).
    const one = [await run(1, 1)];
    const three = [await run(3, 1)];
    one.push(await run(1, 2));
    three.push(await run(3, 2));
    type Round = { seconds: number; rest: number; dbCpu: number; nodeCpu: number; busy: number };
    const best = (xs: Round[]) => xs.reduce((a, b) => (b.seconds < a.seconds ? b : a));
    // CPU a message: the database server's, the nodes' (every posthaste process); and how many of
    // the machine's cores were busy while timed (every process), which tells a loss to CPU from
    // a loss to waiting.
    const side = (label: string, r: Round, rounds: Round[]) =>
      `  ${label}  ${fmt(N / r.seconds)} msg/s  (${fmt(r.seconds, 2)} s; CPU a message: database server ${fmt((r.dbCpu * 1000) / N, 2)} ms, nodes ${fmt((r.nodeCpu * 1000) / N, 2)} ms; cores busy ${fmt(r.busy, 2)} of ${cpus().length}; after the first tenth ${fmt((N * 0.9) / r.rest)} msg/s; rounds ${rounds.map((x) => `${fmt(x.seconds, 2)} s (${fmt((N * 0.9) / x.rest)} msg/s after the first tenth)`).join(', ')})`;
    const bestRest = (xs: Round[]) => xs.reduce((x, y) => (y.rest < x.rest ? y : x));
    const ra = bestRest(one);
    const rb = bestRest(three);
    const a = best(one);
    const b = best(three);
    return {
      lines: [
        `cluster drain: ${N} queued messages delivered to a loopback smtp-sink (DKIM on) from one PostgreSQL, ${POOL} database and ${SMTP} SMTP connections in all, claims of ${CLAIM_BATCH}, the cores' signing threads shared out (${signers(1)} for one node, ${signers(3)} each for three); best of 2 rounds, alternating`,
        side('one node   ', a, one),
        side('three nodes', b, three),
        `  ratio three / one after the first tenth  ${fmt(ra.rest / rb.rest, 2)}  (goal >= 0.9); the whole drain ${fmt(a.seconds / b.seconds, 2)}`,
      ],
    };
  } finally {
    await rig.close();
    cluster.remove();
  }
}
