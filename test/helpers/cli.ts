import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../../bin/posthaste.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The environment the CLI runs in: this process's without its POSTHASTE_* variables (the tests'
 * own, such as POSTHASTE_REQUIRE_PEERS, would be read as configuration overrides), plus `env`.
 */
export function cliEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('POSTHASTE_')));
  return { ...clean, ...env };
}

/** Runs the built `posthaste` binary, as an administrator would. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: cliEnv(env), timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export function json<T = unknown>(r: CliResult): T {
  return JSON.parse(r.stdout) as T;
}
