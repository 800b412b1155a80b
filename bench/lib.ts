import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Benchmarks work on the same disk as a real data_dir would be: under the project. */
export function workDir(name: string): string {
  const dir = join(ROOT, 'bench', '.work', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Starts a child process and waits for a line matching `ready`; returns the match. */
export function spawnReady(cmd: string, args: string[], ready: RegExp, env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      const m = ready.exec(buf);
      if (m) {
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
    setTimeout(() => reject(new Error(`timeout waiting for ${ready}: ${buf.slice(-2000)}`)), 30_000).unref();
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
  requests: number;
  perSecond: number;
  statusCounts: Record<string, number>;
  p99ms: number;
}

/** A bounded HTTP load: `connections` keep-alive connections for `seconds`. */
export async function httpLoad(url: string, opts: { connections: number; seconds: number; headers: Record<string, string>; body: string }): Promise<LoadResult> {
  const r = await autocannon({
    url,
    method: 'POST',
    connections: opts.connections,
    duration: opts.seconds,
    headers: opts.headers,
    body: opts.body,
  });
  const statusCounts: Record<string, number> = {};
  for (const [k, v] of Object.entries(r.statusCodeStats ?? {})) statusCounts[k] = (v as { count: number }).count;
  const ok = (statusCounts['202'] ?? 0);
  return { requests: ok, perSecond: ok / opts.seconds, statusCounts, p99ms: r.latency.p99 };
}

export function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}
