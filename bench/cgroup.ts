// CPU caps for benchmark processes: a cgroup (v1, the cpu controller) of its own for each, with a
// CFS quota. Each process is put in its group by the shell that then execs it, so it does no work
// outside the cap; every group is removed at the end, and at exit if the benchmark fails.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup/cpu';
/** The CFS period every group gets (µs): the quota is this times the share of a core. */
const PERIOD_US = 100_000;

export interface CpuCap {
  /** The command and arguments that run `cmd args` inside group `name` (created on the first use), capped at `cores` (null: not yet). */
  wrap(name: string, cores: number | null, cmd: string, args: string[]): { cmd: string; args: string[] };
  /** Sets group `name`'s cap to `cores` of a core, or lifts it (null), its processes running. */
  limit(name: string, cores: number | null): void;
  /** How often and for how long group `name` was throttled so far (cpu.stat). */
  throttled(name: string): { periods: number; throttled: number; seconds: number };
  /** Removes every group made (their processes must have ended). */
  remove(): void;
}

/** A parent group for this run (`posthaste-bench-<pid>`) under the cpu controller; fails clearly where there is none. */
export function cpuCaps(): CpuCap {
  if (!existsSync(join(ROOT, 'cpu.cfs_quota_us')))
    throw new Error(`no cgroup v1 cpu controller at ${ROOT}: the capped benchmark needs one (and root)`);
  const parent = join(ROOT, `posthaste-bench-${process.pid}`);
  const made: string[] = [];
  const remove = () => {
    for (const dir of [...made].reverse()) {
      // A process that has just been killed may still be leaving its group: try a few times.
      for (let i = 0; i < 50 && existsSync(dir); i++) {
        try {
          rmdirSync(dir);
        } catch {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
        }
      }
    }
    made.length = 0;
  };
  process.once('exit', remove);
  const group = (name: string) => join(parent, name);
  const quota = (dir: string, cores: number | null) =>
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), cores === null ? '-1' : String(Math.round(cores * PERIOD_US)));
  return {
    wrap: (name, cores, cmd, args) => {
      if (!existsSync(parent)) {
        mkdirSync(parent);
        made.push(parent);
      }
      const dir = group(name);
      if (!existsSync(dir)) {
        mkdirSync(dir);
        made.push(dir);
      }
      writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
      quota(dir, cores);
      // The shell joins the group, then becomes the process: its pid is the process's.
      return {
        cmd: '/bin/sh',
        args: ['-c', `echo $$ > ${join(dir, 'cgroup.procs')} && exec "$0" "$@"`, cmd, ...args],
      };
    },
    limit: (name, cores) => quota(group(name), cores),
    throttled: (name) => {
      const stat = Object.fromEntries(
        readFileSync(join(group(name), 'cpu.stat'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => l.split(' ') as [string, string]),
      );
      return {
        periods: Number(stat.nr_periods),
        throttled: Number(stat.nr_throttled),
        seconds: Number(stat.throttled_time) / 1e9,
      };
    },
    remove,
  };
}
