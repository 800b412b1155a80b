// A private Postfix instance for benchmarks: installed from Debian's package if missing,
// configured under bench/.work, listening on loopback, relaying to a given sink.
import { execFileSync, execSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function ensurePostfix(): void {
  if (existsSync('/usr/sbin/postfix') && existsSync('/usr/sbin/smtp-sink') && existsSync('/usr/sbin/smtp-source')) return;
  execSync('apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postfix', { stdio: 'inherit' });
}

export function startSink(port: number): ChildProcess {
  // smtp-sink: Postfix's C test sink; accepts and discards. -u: run as nobody when started as root.
  return spawn('/usr/sbin/smtp-sink', ['-u', 'nobody', `127.0.0.1:${port}`, '1024'], { stdio: 'ignore' });
}

export class PostfixInstance {
  constructor(
    readonly dir: string,
    readonly listenPort: number,
    readonly sinkPort: number,
  ) {}

  private postconf(...args: string[]): void {
    execFileSync('/usr/sbin/postconf', ['-c', this.dir, ...args]);
  }

  private postfix(cmd: string): void {
    // postfix(1) reports startup errors only to syslog or a terminal: `script` gives it one.
    execFileSync('script', ['-qc', `/usr/sbin/postfix -c ${this.dir} ${cmd}`, '/dev/null'], { stdio: 'ignore' });
  }

  start(): void {
    mkdirSync(join(this.dir, 'queue'), { recursive: true });
    mkdirSync(join(this.dir, 'data'), { recursive: true });
    execSync(`cp /etc/postfix/master.cf ${this.dir}/master.cf && chown postfix ${this.dir}/data`);
    writeFileSync(
      join(this.dir, 'main.cf'),
      [
        'compatibility_level = 3.6',
        `queue_directory = ${this.dir}/queue`,
        `data_directory = ${this.dir}/data`,
        'mail_owner = postfix',
        'myhostname = bench.local',
        'inet_interfaces = 127.0.0.1',
        'inet_protocols = ipv4',
        'mynetworks = 127.0.0.0/8',
        'mydestination =',
        `relayhost = [127.0.0.1]:${this.sinkPort}`,
        'smtpd_relay_restrictions = permit_mynetworks, reject',
        'defer_transports = smtp', // hold outbound while the queue is filled
        'smtp_tls_security_level = none',
        'smtpd_tls_security_level = none',
        'alias_maps =',
        'alias_database =',
        `maillog_file = ${this.dir}/maillog`,
        `maillog_file_prefixes = ${this.dir}`,
      ].join('\n') + '\n',
    );
    this.postconf('-F', '*/*/chroot = n');
    this.postconf('-M#', 'smtp/inet');
    this.postconf('-M', `127.0.0.1:${this.listenPort}/inet=127.0.0.1:${this.listenPort} inet n - n - - smtpd`);
    this.postfix('set-permissions');
    this.postfix('start');
  }

  /** Files in the incoming, active and deferred queues. */
  queued(): number {
    let n = 0;
    // Postfix moves files while we count: a vanished entry is simply not counted.
    const walk = (d: string) => {
      let entries;
      try {
        entries = readdirSync(d, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        if (e.isDirectory()) walk(join(d, e.name));
        else n++;
      }
    };
    for (const q of ['incoming', 'active', 'deferred', 'maildrop']) walk(join(this.dir, 'queue', q));
    return n;
  }

  release(): void {
    this.postconf('-e', 'defer_transports =');
    this.postfix('reload');
    execFileSync('/usr/sbin/postqueue', ['-c', this.dir, '-f']);
  }

  stop(): void {
    try {
      this.postfix('stop');
    } catch {
      /* already stopped */
    }
  }
}

export function smtpSource(port: number, count: number, sessions: number, bytes: number): void {
  execFileSync('/usr/sbin/smtp-source', ['-s', String(sessions), '-l', String(bytes), '-m', String(count), '-f', 'bench@example.com', '-t', 'rcpt@sink.test', `127.0.0.1:${port}`], { stdio: 'ignore' });
}
