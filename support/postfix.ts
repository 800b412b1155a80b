import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';

/** Why Debian's Postfix cannot be run here, or null when it can (installed, and we are root: its master starts as root). */
export function postfixAvailable(): string | null {
  if (!existsSync('/usr/sbin/postfix')) return 'Postfix is not installed (apt-get install postfix; .ci/run does)';
  if (process.getuid?.() !== 0) return 'Postfix needs root to start its master process';
  return null;
}

/** The kernel's range for the local ports of outgoing connections (net.ipv4.ip_local_port_range). */
export function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && high) return [low, high];
  } catch {
    /* not Linux: its default below */
  }
  return [32768, 60999];
}

/** Listens on 127.0.0.1:port (0: any) and closes again; the port, or null if it was taken. */
function tryListen(port: number): Promise<number | null> {
  const s = net.createServer();
  return new Promise((resolve) => {
    s.once('error', () => resolve(null));
    s.listen(port, '127.0.0.1', () => {
      const bound = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(bound));
    });
  });
}

/**
 * A free TCP port on 127.0.0.1 for a listener started next (closed again at once: Postfix binds
 * it), below the ephemeral range. A port inside that range can become the local port of any
 * outgoing connection before the listener binds it, and a client's TIME-WAIT on it refuses even
 * a bind with SO_REUSEADDR for a minute: Postfix's master then dies saying only "mail system
 * startup failed".
 */
export async function freePort(): Promise<number> {
  const floor = 10_000;
  const [low] = ephemeralRange();
  for (let i = 0; low - floor > 1_000 && i < 50; i++) {
    const port = await tryListen(floor + Math.floor(Math.random() * (low - floor)));
    if (port !== null) return port;
  }
  const port = await tryListen(0);
  if (port === null) throw new Error('no free port on 127.0.0.1');
  return port;
}

export interface PostfixOptions {
  /** Where this instance keeps its configuration, queue, mailboxes and log. */
  dir: string;
  /** Its SMTP listener on 127.0.0.1. */
  port: number;
  /** Everything it sends (relayed mail, its own bounces) goes to 127.0.0.1 on this port, without DNS. */
  relayPort: number;
  /** Its name in greetings, Received lines and the bounces it writes. */
  hostname: string;
  /**
   * A domain it receives mail for, into mbox files under dir/mail, and the users that exist there.
   * Mail for other users there is accepted and then bounced, as Postfix does it
   * (smtpd_reject_unlisted_recipient = no): the bounce is its own DSN, sent to the envelope sender.
   */
  mailboxes?: { domain: string; users: string[] };
  /** PEM files for STARTTLS on its listener (none: no STARTTLS). */
  tls?: { cert: string; key: string };
  /** More main.cf lines, after the ones above. */
  extra?: string[];
}

/**
 * A private instance of Debian's Postfix: its own configuration, queue and log in one directory,
 * listening on loopback, relaying to one loopback port. The tests use it as a real peer; the
 * benchmarks as the anchor.
 */
export class PostfixPeer {
  constructor(readonly o: PostfixOptions) {}

  private postfix(args: string): void {
    // postfix(1) reports startup errors only to syslog or a terminal: `script` gives it one, and
    // passes its exit status on (-e), so that a failure is an error saying what Postfix said.
    const r = spawnSync('script', ['-qec', `/usr/sbin/postfix -c ${this.o.dir} ${args}`, '/dev/null'], {
      encoding: 'utf8',
    });
    if (r.status !== 0) {
      const said = `${r.stdout ?? ''}`.split(/\r?\n/).filter((l) => l && !l.includes('warning:'));
      throw new Error(`postfix ${args} (${this.o.dir}) exited ${r.status}: ${said.slice(-5).join(' | ')}`);
    }
  }

  postconf(...args: string[]): void {
    execFileSync('/usr/sbin/postconf', ['-c', this.o.dir, ...args]);
  }

  start(): this {
    const { dir, mailboxes, tls } = this.o;
    for (const d of ['queue', 'data', 'mail']) mkdirSync(join(dir, d), { recursive: true });
    copyFileSync(
      existsSync('/etc/postfix/master.cf') ? '/etc/postfix/master.cf' : '/usr/share/postfix/master.cf.dist',
      join(dir, 'master.cf'),
    );
    chownSync(join(dir, 'data'), Number(execFileSync('id', ['-u', 'postfix']).toString().trim()), -1);
    const lines = [
      'compatibility_level = 3.6',
      `queue_directory = ${dir}/queue`,
      `data_directory = ${dir}/data`,
      'mail_owner = postfix',
      `myhostname = ${this.o.hostname}`,
      'myorigin = $myhostname',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'mynetworks = 127.0.0.0/8',
      'mydestination =',
      `relayhost = [127.0.0.1]:${this.o.relayPort}`,
      'smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination',
      'smtp_tls_security_level = none',
      'disable_dns_lookups = yes',
      'smtp_host_lookup = native',
      'alias_maps =',
      'alias_database =',
      `maillog_file = ${dir}/maillog`,
      `maillog_file_prefixes = ${dir}`,
    ];
    if (mailboxes) {
      chownSync(join(dir, 'mail'), 65534, 65534);
      writeFileSync(join(dir, 'vmailbox'), mailboxes.users.map((u) => `${u}@${mailboxes.domain} ${u}\n`).join(''));
      lines.push(
        `virtual_mailbox_domains = ${mailboxes.domain}`,
        `virtual_mailbox_maps = texthash:${dir}/vmailbox`,
        `virtual_mailbox_base = ${dir}/mail`,
        'virtual_uid_maps = static:65534',
        'virtual_gid_maps = static:65534',
        'smtpd_reject_unlisted_recipient = no',
      );
    }
    if (tls) {
      copyFileSync(tls.cert, join(dir, 'cert.pem'));
      copyFileSync(tls.key, join(dir, 'key.pem'));
      lines.push(
        'smtpd_tls_security_level = may',
        `smtpd_tls_cert_file = ${dir}/cert.pem`,
        `smtpd_tls_key_file = ${dir}/key.pem`,
        'smtpd_tls_received_header = yes',
      );
    } else {
      lines.push('smtpd_tls_security_level = none');
    }
    writeFileSync(join(dir, 'main.cf'), [...lines, ...(this.o.extra ?? [])].join('\n') + '\n');
    this.postconf('-F', '*/*/chroot = n');
    this.postconf('-M#', 'smtp/inet');
    this.postconf('-M', `127.0.0.1:${this.o.port}/inet=127.0.0.1:${this.o.port} inet n - n - - smtpd`);
    this.postfix('set-permissions');
    try {
      this.postfix('start');
    } catch (e) {
      throw new Error(`${(e as Error).message}; ${this.portState()}`);
    }
    return this;
  }

  /**
   * Why a start may have failed that Postfix cannot say: its master dies before anything logs,
   * so a listener it could not bind leaves no line in the maillog. Binds the port as master does
   * (SO_REUSEADDR and SO_REUSEPORT) and lists the sockets on it in any state: a client's
   * TIME-WAIT on that local port, for one, refuses the bind for up to a minute.
   */
  private portState(): string {
    const bind = spawnSync(
      'python3',
      [
        '-c',
        'import socket,sys\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEPORT,1)\ntry:\n  s.bind(("127.0.0.1",int(sys.argv[1]))); print("free")\nexcept OSError as e: print(e)',
        String(this.o.port),
      ],
      { encoding: 'utf8' },
    );
    const held = spawnSync('ss', ['-tanpo', `( sport = :${this.o.port} )`], { encoding: 'utf8' });
    const sockets = `${held.stdout ?? ''}`.split('\n').slice(1).filter(Boolean).slice(0, 5);
    return `binding 127.0.0.1:${this.o.port} as master does: ${`${bind.stdout ?? ''}`.trim() || 'unknown'}; sockets on it: ${sockets.join(' | ') || 'none'}`;
  }

  /** Reread main.cf (after postconf -e). */
  reload(): void {
    this.postfix('reload');
  }

  /** Attempt delivery of everything queued now. */
  flush(): void {
    execFileSync('/usr/sbin/postqueue', ['-c', this.o.dir, '-f']);
  }

  /** What it delivered to a user's mbox, as raw messages. */
  mailbox(user: string): Buffer[] {
    const file = join(this.o.dir, 'mail', user);
    if (!existsSync(file)) return [];
    // mbox: messages separated by "From " lines; the first line of each is the envelope line.
    return readFileSync(file, 'latin1')
      .split(/\n(?=From \S+ )/)
      .filter((m) => m.startsWith('From '))
      .map((m) => Buffer.from(m.slice(m.indexOf('\n') + 1).replace(/\n>From /g, '\nFrom '), 'latin1'));
  }

  log(): string {
    const file = join(this.o.dir, 'maillog');
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  }

  /** Files in its incoming, active, deferred and maildrop queues. */
  queued(): number {
    let n = 0;
    // Postfix moves files while we count: a vanished entry is simply not counted.
    const walk = (d: string) => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = readdirSync(d, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) e.isDirectory() ? walk(join(d, e.name)) : n++;
    };
    for (const q of ['incoming', 'active', 'deferred', 'maildrop']) walk(join(this.o.dir, 'queue', q));
    return n;
  }

  stop(): void {
    try {
      this.postfix('stop');
    } catch {
      /* not running */
    }
  }
}
