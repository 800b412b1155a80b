import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/posthaste.js', import.meta.url));

/** A process's resident memory from /proc, in MiB: now (VmRSS) and its peak so far (VmHWM), threads and all. */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (name: string) => Math.round(Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024);
  return { rss: mib('VmRSS'), peak: mib('VmHWM') };
}

/** The CPU a process has used so far (user and system, threads and all), in ms, from /proc (clock ticks of 10 ms). */
export function cpuOf(pid: number): number {
  // The fields after the command's name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The Node flags the installed command runs with: those on bin/posthaste.js's #! line. */
export function nodeFlags(): string[] {
  return (readFileSync(BIN, 'utf8').split('\n', 1)[0] ?? '').split(/\s+/).filter((a) => a.startsWith('--'));
}

export interface DaemonProcess {
  child: ChildProcess;
  apiUrl: string;
  smtpPort: number;
  /** The first submission listener's port, when one is configured. */
  submissionPort: number | undefined;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * The environment posthaste runs in when a test or a benchmark starts it: this process's without
 * its POSTHASTE_* variables (the runner's own, such as POSTHASTE_REQUIRE_PEERS, would be read as
 * configuration overrides and refused), plus `env`.
 */
export function cleanEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('POSTHASTE_')));
  return { ...clean, ...env };
}

/**
 * Starts the built daemon (`posthaste serve`) as a separate process, as systemd would. With
 * `bare`, without the test runner's NODE_OPTIONS: tap adds its module loader to every process it
 * sees spawned, and Node runs a loader on a thread of its own beside every isolate (about 10 MB
 * each, 45 MB in all for the daemon's four isolates), so memory is measured without it. `env -u`
 * removes it after tap has rewritten the environment.
 */
export function spawnDaemon(
  configPath: string,
  env: NodeJS.ProcessEnv = {},
  opts: { bare?: boolean } = {},
): Promise<DaemonProcess> {
  const args = [...nodeFlags(), BIN, '--config', configPath, 'serve'];
  const [command, argv] = opts.bare
    ? ['/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, ...args]]
    : [process.execPath, args];
  const child = spawn(command, argv, { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d.toString()));
  child.stderr!.on('data', (d) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    // Generous for a loaded machine (migrations, four isolates starting); a start that fails ends sooner, through `exited`.
    const timer = setTimeout(() => reject(new Error(`daemon did not start: ${out}`)), 60_000);
    const check = () => {
      const api = /API on (http:\/\/\S+)/.exec(out);
      const smtp = /SMTP on [\d.]+:(\d+)/.exec(out);
      if (api && smtp) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        child.stderr!.off('data', check);
        const submission = /submission on [\d.]+:(\d+)/.exec(out);
        resolve({
          child,
          apiUrl: api[1]!,
          smtpPort: Number(smtp[1]),
          submissionPort: submission ? Number(submission[1]) : undefined,
          output: () => out,
          exited,
        });
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    exited.then(() => reject(new Error(`daemon exited: ${out}`)));
  });
}
