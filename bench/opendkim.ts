// OpenDKIM (Debian's opendkim, C) as a milter for the Postfix anchor, so that Postfix can be
// measured doing the work posthaste does: signing every message for example.com, relaxed/relaxed
// rsa-sha256 with a 2048-bit key, as its smtpd receives it (where a Postfix installation signs).
import { type ChildProcess, execSync, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { waitFor } from '../support/wait.js';
import { processCpu } from './lib.js';

const SELECTOR = 'bench';
const DOMAIN = 'example.com';

export function ensureOpendkim(): void {
  if (existsSync('/usr/sbin/opendkim')) return;
  execSync(
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends opendkim',
    { stdio: 'inherit' },
  );
}

export interface Milter {
  /** Postfix's smtpd_milters value for it. */
  socket: string;
  /** Throws unless `raw` carries one DKIM signature by example.com that verifies against this milter's key. */
  verify(raw: Buffer): Promise<void>;
  /** CPU seconds it has used so far, all threads. */
  cpuSeconds(): number;
  stop(): void;
}

/** Starts OpenDKIM in the foreground on 127.0.0.1:`port` with a new key under `dir`. */
export async function startOpendkim(dir: string, port: number): Promise<Milter> {
  ensureOpendkim();
  mkdirSync(dir, { recursive: true });
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyFile = join(dir, 'key.pem');
  writeFileSync(keyFile, privateKey.export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 });
  const record = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
  const conf = join(dir, 'opendkim.conf');
  writeFileSync(
    conf,
    [
      'Syslog no',
      'Mode s',
      `Domain ${DOMAIN}`,
      `Selector ${SELECTOR}`,
      `KeyFile ${keyFile}`,
      `Socket inet:${port}@127.0.0.1`,
      'Canonicalization relaxed/relaxed',
      'SignatureAlgorithm rsa-sha256',
      'RequireSafeKeys false',
      `PidFile ${join(dir, 'opendkim.pid')}`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('/usr/sbin/opendkim', ['-f', '-x', conf], { stdio: 'ignore' });
  await listening(port, child).catch((e: unknown) => {
    child.kill();
    throw e;
  });
  return {
    socket: `inet:127.0.0.1:${port}`,
    async verify(raw) {
      const name = `${SELECTOR}._domainkey.${DOMAIN}`;
      const verified = await dkimVerify(raw, {
        resolver: async (n: string, type: string) => (type === 'TXT' && n === name ? [[record]] : []),
      } as never);
      const results = (verified.results as Array<{ signingDomain?: string; status: { result: string } }>).map(
        (r) => `${r.status.result} ${r.signingDomain ?? '(no signature)'}`,
      );
      if (results.join(',') !== `pass ${DOMAIN}`)
        throw new Error(`OpenDKIM's signature did not verify: ${results.join(', ') || 'no signature'}`);
    },
    cpuSeconds: () => processCpu(child.pid!),
    stop() {
      child.kill();
    },
  };
}

/** Waits until something accepts connections on 127.0.0.1:`port`, failing if `child` exits first. */
async function listening(port: number, child: ChildProcess): Promise<void> {
  const accepts = () =>
    new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
  await waitFor(
    `opendkim to listen on 127.0.0.1:${port}`,
    () => {
      if (child.exitCode !== null) throw new Error(`opendkim exited with ${child.exitCode}`);
      return accepts();
    },
    5000,
    50,
  );
}
