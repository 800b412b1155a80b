import { execFile } from 'node:child_process';
import { BIN, cleanEnv } from '../../support/daemon-process.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `posthaste` binary, as an administrator would. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: cleanEnv(env), timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export function json<T = unknown>(r: CliResult): T {
  return JSON.parse(r.stdout) as T;
}
