// Postfix for the benchmarks: installed from Debian's package if missing; a private instance
// (support/postfix.ts) under bench/.work, listening on loopback, relaying to a given sink.
import { type ChildProcess, execFileSync, execSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { PostfixPeer } from '../support/postfix.js';

export function ensurePostfix(): void {
  if (existsSync('/usr/sbin/postfix') && existsSync('/usr/sbin/smtp-sink') && existsSync('/usr/sbin/smtp-source'))
    return;
  execSync('apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postfix', { stdio: 'inherit' });
}

export function startSink(port: number): ChildProcess {
  // smtp-sink: Postfix's C test sink; accepts and discards. -u: run as nobody when started as root.
  return spawn('/usr/sbin/smtp-sink', ['-u', 'nobody', `127.0.0.1:${port}`, '1024'], { stdio: 'ignore' });
}

/**
 * Postfix as the benchmarks' anchor: relaying to a sink, outbound held (defer_transports) while
 * its queue is filled, so that release() times delivery alone.
 */
export function heldRelay(
  dir: string,
  listenPort: number,
  sinkPort: number,
  extra: string[] = [],
): PostfixPeer & { release(): void } {
  const pf = new PostfixPeer({
    dir,
    port: listenPort,
    relayPort: sinkPort,
    hostname: 'bench.local',
    extra: ['defer_transports = smtp', ...extra],
  });
  return Object.assign(pf, {
    release(): void {
      pf.postconf('-e', 'defer_transports =');
      pf.reload();
      pf.flush();
    },
  });
}

/** smtp-source: `count` messages of `bytes` bytes' body from bench@example.com to `to`, over `sessions` sessions at once. */
export function smtpSource(port: number, count: number, sessions: number, bytes: number, to = 'rcpt@sink.test'): void {
  execFileSync(
    '/usr/sbin/smtp-source',
    [
      '-s',
      String(sessions),
      '-l',
      String(bytes),
      '-m',
      String(count),
      '-f',
      'bench@example.com',
      '-t',
      to,
      `127.0.0.1:${port}`,
    ],
    {
      stdio: 'ignore',
    },
  );
}

/**
 * Postfix's smtpd as a receiving MX that takes every message for any domain and discards it once
 * queued: a real server's dialogue (it offers PIPELINING and CHUNKING), its queue file fsynced
 * before each 250.
 */
export function discardingMx(dir: string, port: number): PostfixPeer {
  return new PostfixPeer({
    dir,
    port,
    relayPort: port,
    hostname: 'mx.sink.test',
    extra: [
      'default_transport = discard:',
      'relay_transport = discard:',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
    ],
  });
}
