import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { fixturePath } from './fixtures.js';

// What the submission tests share: the daemon's [submission] section, the real clients that
// submit to it (Debian's swaks; Python's smtplib; nodemailer) and the checks made on what arrives.

/** A daemon's submission listeners on port-0 loopback addresses with the test certificate; `extra` more lines of the section. */
export function submissionToml(extra = ''): string {
  return (
    `[submission]\nlisten = "127.0.0.1:0"\nlisten_tls = "127.0.0.1:0"\n` +
    `tls.cert = "${fixturePath('tls/server.pem')}"\ntls.key = "${fixturePath('tls/server-key.pem')}"\n${extra}`
  );
}

/** Why swaks cannot run here (with its TLS, which needs Net::SSLeay), or null. */
export function swaksAvailable(): string | null {
  if (!existsSync('/usr/bin/swaks'))
    return 'swaks is not installed (apt-get install swaks libnet-ssleay-perl; .ci/run does)';
  if (spawnSync('perl', ['-MNet::SSLeay', '-e', '1']).status !== 0)
    return "swaks's TLS needs Net::SSLeay (apt-get install libnet-ssleay-perl; .ci/run does)";
  return null;
}

/** Runs a program without blocking the event loop (the daemon under test shares it); its output and exit code. */
export function runProgram(file: string, args: string[], input?: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (e, stdout, stderr) => {
      resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

/** swaks against 127.0.0.1:port with these arguments (`input`: its standard input, for `--data -`). */
export function swaks(port: number, args: string[], input?: string): Promise<{ code: number; out: string }> {
  return runProgram('/usr/bin/swaks', ['--server', `127.0.0.1:${port}`, '--helo', 'app.test', ...args], input);
}

/** The Message-ID a 250 reply names ("queued as <id>"), or undefined. */
export function queuedAs(out: string): string | undefined {
  return /250 2\.0\.0 Ok: queued as (\S+)/.exec(out)?.[1];
}

/** mailauth's DKIM verdicts for a message, with the public keys answered from `records` (name → TXT). */
export async function dkimResults(message: Buffer, records: Record<string, string>): Promise<string[]> {
  const r = await dkimVerify(message, {
    resolver: async (name: string, type: string) => (type === 'TXT' && records[name] ? [[records[name]]] : []),
  } as never);
  return r.results.map(
    (x: { signingDomain?: string; status: { result: string; comment?: string } }) =>
      `${x.signingDomain}:${x.status.result}${x.status.result === 'pass' ? '' : ` (${x.status.comment})`}`,
  );
}
