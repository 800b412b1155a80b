import { type ChildProcess, execFile, execSync, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BIN, memoryOf, nodeFlags } from '../support/daemon-process.js';
import { ephemeralRange } from '../support/postfix.js';

export { memoryOf };

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A fixed loopback port a benchmark listens on (a sink, a Postfix anchor, OpenDKIM), checked to
 * lie below the ephemeral range: a port inside it can be the local port of an outgoing connection
 * made in the minute before (the benchmarks make tens of thousands), and a client's TIME-WAIT on it
 * refuses even Postfix's SO_REUSEADDR bind, its master dying with only "mail system startup failed".
 */
export function fixedPort(port: number): number {
  const [low, high] = ephemeralRange();
  if (port >= low && port <= high)
    throw new Error(
      `benchmark port ${port} is inside the ephemeral range ${low}-${high} (net.ipv4.ip_local_port_range)`,
    );
  return port;
}
/** Benchmarks work on the same disk as a real data_dir would be: under the project. */
export function workDir(name: string): string {
  const dir = join(ROOT, 'bench', '.work', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Node's arguments for `posthaste serve` with `config`, as the installed command runs it (its #!
 * line's flags); with BENCH_PROF set, a CPU profile of every thread written under `profDir`.
 */
export function daemonArgs(config: string, profDir?: string): string[] {
  const prof = process.env.BENCH_PROF && profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  return [...nodeFlags(), ...prof, BIN, '--config', config, 'serve'];
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Median milliseconds to write 4 KiB to a new file and fsync it, over `n` files, on the benchmarks' disk. */
export function fsyncMs(n = 30): number {
  const dir = join(ROOT, 'bench', '.work', 'fsync-probe');
  mkdirSync(dir, { recursive: true });
  const block = Buffer.alloc(4096, 'x');
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const fd = openSync(join(dir, String(i)), 'w');
    writeSync(fd, block);
    fsyncSync(fd);
    closeSync(fd);
    times.push(performance.now() - t);
  }
  rmSync(dir, { recursive: true, force: true });
  return median(times);
}

/** What settleDisk found: an fsync's cost when a side's timing started, and how long it waited for it. */
export interface DiskState {
  fsyncMs: number;
  waitedS: number;
}

/** The disk's fsync time before any benchmark ran (set by bench/run.ts; otherwise the first settleDisk measures it). */
let quietFsync: number | undefined;
export function measureQuietDisk(): number {
  execSync('sync');
  quietFsync = fsyncMs();
  return quietFsync;
}

/**
 * Waits (at most `limitMs`) until an fsync takes no longer than about what it took before the
 * benchmarks started, and returns what it took then. After tens of thousands of queue files have
 * been written and deleted, an fsync on this machine's disk took 2.1-2.7 ms for 40-50 s against
 * 0.33-0.37 ms quiet: Postfix fsyncs every queue file, so an anchor timed in that window ran at
 * half its speed, and the ratio beside it said more about the benchmark before than about posthaste.
 */
export async function settleDisk(limitMs = 120_000): Promise<DiskState> {
  quietFsync ??= measureQuietDisk();
  const bound = Math.max(2 * quietFsync, quietFsync + 0.25);
  const start = performance.now();
  execSync('sync');
  let ms = fsyncMs();
  while (ms > bound && performance.now() - start < limitMs) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    ms = fsyncMs();
  }
  return { fsyncMs: ms, waitedS: (performance.now() - start) / 1000 };
}

/** The line a benchmark prints about the disk each timed side started on (settleDisk's results, in order). */
export function diskLine(sides: Array<DiskState & { label: string }>): string {
  const waited = sides.reduce((sum, s) => sum + s.waitedS, 0);
  return `  disk before each side (fsync of 4 KiB): ${sides.map((s) => `${s.label} ${fmt(s.fsyncMs, 2)} ms`).join(', ')}; quiet ${fmt(quietFsync ?? Number.NaN, 2)} ms; waited ${fmt(waited)} s for it to settle`;
}

/** Polls `check` every 20 ms until it holds; fails after `limitMs`. */
export async function waitUntil(check: () => boolean, limitMs: number): Promise<void> {
  const end = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('benchmark did not finish in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts a child process and waits for a line matching `ready`; returns the match. */
export function spawnReady(
  cmd: string,
  args: string[],
  ready: RegExp,
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      const m = ready.exec(buf);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stderr!.off('data', onData);
        child.stdout!.resume();
        child.stderr!.resume();
        resolve({ child, match: m });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${buf.slice(-2000)}`)));
    const timer = setTimeout(() => {
      // Not left running: a process that never said it was ready would outlive the benchmark.
      child.kill('SIGKILL');
      reject(new Error(`timeout waiting for ${ready}: ${buf.slice(-2000)}`));
    }, 30_000);
    timer.unref();
  });
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.removeAllListeners('exit');
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });
}

export interface LoadResult {
  /** 2xx responses. */
  requests: number;
  perSecond: number;
  /** Responses that were not 2xx or 3xx, and socket errors, as wrk counts them. */
  failed: number;
  socketErrors: string;
  p99ms: number;
}

/** wrk (Debian's package, C, one thread): a load generator light enough not to crowd 2 cores. */
export function ensureWrk(): void {
  if (existsSync('/usr/bin/wrk')) return;
  execSync('apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk', { stdio: 'inherit' });
}

const WRK_SCRIPT = `wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
for name, value in string.gmatch(os.getenv("BENCH_HEADERS"), "([^\\n:]+): ([^\\n]*)") do wrk.headers[name] = value end
`;

/** Loads started so far by this process (each names its wrk script). */
let loads = 0;

/** A bounded HTTP load: `connections` keep-alive connections for `seconds`, POSTing `body`. */
export async function httpLoad(
  url: string,
  opts: { connections: number; seconds: number; headers: Record<string, string>; body: string },
): Promise<LoadResult> {
  ensureWrk();
  // A file of its own for each load: loads run at once (bench/cluster-scale.ts) would otherwise
  // rewrite one file while a wrk reads it, and a wrk that read it empty sends GETs.
  const script = join(ROOT, 'bench', '.work', `post-${process.pid}-${++loads}.lua`);
  writeFileSync(script, WRK_SCRIPT);
  const run = promisify(execFile)(
    'wrk',
    ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency', '-s', script, url],
    {
      env: {
        ...process.env,
        BENCH_BODY: opts.body,
        BENCH_HEADERS: Object.entries(opts.headers)
          .map(([k, v]) => `${k}: ${v}`)
          .join('\n'),
      },
    },
  );
  const { stdout } = await run.finally(() => rmSync(script, { force: true }));
  const num = (re: RegExp) => Number(re.exec(stdout)?.[1] ?? 0);
  const total = num(/(\d+) requests in/);
  const failed = num(/Non-2xx or 3xx responses: (\d+)/);
  const p99 = /99%\s+([\d.]+)(us|ms|s)\b/.exec(stdout);
  const p99ms = p99 ? Number(p99[1]) * (p99[2] === 'us' ? 0.001 : p99[2] === 's' ? 1000 : 1) : NaN;
  const ok = total - failed;
  return {
    requests: ok,
    perSecond: ok / opts.seconds,
    failed,
    socketErrors: /Socket errors: (.*)/.exec(stdout)?.[1] ?? 'none',
    p99ms,
  };
}

export function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/**
 * `rounds` rounds of two measurements, alternating which goes first (anchor first in even
 * rounds), so a drift in the machine's speed during the run falls on both alike.
 */
export async function alternate<T>(
  rounds: number,
  anchor: () => Promise<T>,
  subject: () => Promise<T>,
): Promise<{ anchor: T[]; subject: T[] }> {
  const out = { anchor: [] as T[], subject: [] as T[] };
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      out.anchor.push(await anchor());
      out.subject.push(await subject());
    } else {
      out.subject.push(await subject());
      out.anchor.push(await anchor());
    }
  }
  return out;
}

/** The daemon's resident memory a second after it is ready, before any load, in MiB. */
export async function idleMemory(pid: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return memoryOf(pid).rss;
}

/** The line every benchmark prints about the daemon's memory; the goal holds for every one. */
export function memoryLine(peakMiB: number, idleMiB?: number): string {
  return `  posthaste memory: ${idleMiB === undefined ? '' : `idle ${idleMiB} MiB, `}peak ${peakMiB} MiB  (goal: peak < 256 MiB)`;
}

/** User + system CPU seconds in the text of a /proc stat file (utime and stime, in USER_HZ: 100 a second on Linux), and the system part. */
function statTimes(stat: string): { seconds: number; kernel: number } {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const kernel = Number(fields[12]) / 100;
  return { seconds: Number(fields[11]) / 100 + kernel, kernel };
}

/** CPU seconds a whole process has used so far, threads that have ended included (/proc/<pid>/stat). */
export function processCpu(pid: number): number {
  return processCpuTimes(pid).seconds;
}

/** processCpu, with the part the kernel spent on the process's behalf (its system time), from one reading. */
export function processCpuTimes(pid: number): { seconds: number; kernel: number } {
  return statTimes(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/**
 * CPU seconds each of a process's threads has used so far (user + system, from
 * /proc/<pid>/task/<tid>/stat), busiest first, named by their comm ("node" is the event loop).
 */
export function threadCpu(pid: number): Array<{ tid: number; name: string; seconds: number }> {
  const out: Array<{ tid: number; name: string; seconds: number }> = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      out.push({
        tid: Number(tid),
        name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        seconds: statTimes(stat).seconds,
      });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out.sort((a, b) => b.seconds - a.seconds);
}

/** The whole machine's CPU seconds in three parts: user (user, nice), kernel (system, irq, softirq) and steal (wanted, given by the host to another guest). */
export interface MachineCpu {
  user: number;
  kernel: number;
  steal: number;
}

/** The machine's CPU seconds so far (/proc/stat's first line, in USER_HZ); with `since`, those used after it. */
export function machineCpu(since?: MachineCpu): MachineCpu {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const now = { user: (f[0]! + f[1]!) / 100, kernel: (f[2]! + f[5]! + f[6]!) / 100, steal: (f[7] ?? 0) / 100 };
  return since
    ? { user: now.user - since.user, kernel: now.kernel - since.kernel, steal: now.steal - since.steal }
    : now;
}

/**
 * The line the delivery benchmarks print about the whole machine's CPU while each side was timed:
 * every process (the sink and the load's clients too), a message, and the kernel's share of it.
 * Both sides run on the same two cores, so what a message costs the machine compares them where
 * a rate alone cannot say why it moved: an anchor that spends its time in system calls is slowed
 * by a machine whose system calls cost more, whatever posthaste does.
 */
export function machineLine(messages: number, sides: Array<{ label: string; cpu: MachineCpu }>): string {
  const side = ({ label, cpu }: { label: string; cpu: MachineCpu }) => {
    const total = cpu.user + cpu.kernel;
    return `${label} ${fmt((total * 1000) / messages, 2)} ms a message (${fmt((cpu.kernel * 100) / total)} % kernel${cpu.steal >= 0.5 ? `, ${fmt(cpu.steal, 1)} s stolen` : ''})`;
  };
  return `  machine CPU while timed (every process): ${sides.map(side).join(', ')}`;
}

/**
 * The line the delivery benchmarks print about the daemon's CPU: its whole CPU time (start
 * included) per message, a steadier figure than a rate on a shared machine, and the busiest threads.
 */
export function cpuLine(pid: number, messages: number): string {
  const threads = threadCpu(pid).filter((th) => th.seconds >= 0.1);
  const total = processCpu(pid);
  return `  posthaste CPU: ${fmt((total * 1000) / messages, 2)} ms a message (${fmt(total, 1)} s in all; by thread: ${threads.map((th) => fmt(th.seconds, 1)).join(', ')})`;
}
