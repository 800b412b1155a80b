import net from 'node:net';

/**
 * What a scripted peer does. Everything left out is what a plain, pipelining SMTP server does:
 * greet with 220, list `ehlo`, answer 250 (354 to DATA, 221 to QUIT) and take every message.
 */
export interface PeerScript {
  /** The greeting; a 421 greeting is followed by closing the connection, null greets not at all. */
  banner?: string | null;
  /** The EHLO reply's extension lines (default PIPELINING). */
  ehlo?: string[];
  /** The reply to a command line, or to "." for a message's end; undefined for the default. */
  answer?: (line: string) => string | undefined;
  /** Answer nothing until DATA or BDAT has arrived (only a pipelining client gets past MAIL FROM). */
  holdUntilData?: boolean;
  /** Drop the connection when the message's first bytes arrive after the 354. */
  dropInData?: boolean;
}

/**
 * A raw SMTP peer on loopback for what smtp-server will not do: a DATA accepted after a refused
 * RCPT, replies held until the whole pipeline is in, a 421 greeting, no greeting at all, a
 * connection dropped in the middle of DATA. It records the command lines in the reads they
 * arrived in, and each message's bytes as they came after DATA.
 */
export class ScriptedPeer {
  /** Command lines in the reads they arrived in. */
  reads: string[][] = [];
  /** Each message's bytes as they came after DATA, up to and with the ending dot line; or its BDAT chunks joined. */
  messages: string[] = [];
  connections = 0;
  port = 0;
  private readonly server = net.createServer((socket) => this.session(socket));
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly script: PeerScript = {}) {}

  /** Listens on `host`:`port` (0: a free port, in `port` once started). */
  start(port = 0, host = '127.0.0.1'): Promise<this> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.port = (this.server.address() as net.AddressInfo).port;
        resolve(this);
      });
    });
  }

  stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private session(socket: net.Socket): void {
    const { script } = this;
    this.connections++;
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    const banner = script.banner === undefined ? '220 scripted ESMTP' : script.banner;
    if (banner === null) return;
    if (banner.startsWith('421')) {
      socket.end(`${banner}\r\n`);
      return;
    }
    socket.write(`${banner}\r\n`);
    let buffered = '';
    let data: string | null = null;
    // A BDAT chunk being read (RFC 3030: exactly `left` more bytes, whatever became of the envelope), and the chunks so far.
    let bdat: { left: number; last: boolean; answer: string } | null = null;
    let chunks = '';
    let held: string[] = [];
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      if (data !== null && script.dropInData) {
        socket.destroy();
        return;
      }
      buffered += chunk;
      const lines: string[] = [];
      const out: string[] = [];
      for (;;) {
        if (bdat !== null) {
          const take = Math.min(bdat.left, buffered.length);
          chunks += buffered.slice(0, take);
          buffered = buffered.slice(take);
          bdat.left -= take;
          if (bdat.left > 0) break;
          if (bdat.last) {
            this.messages.push(chunks);
            chunks = '';
          }
          out.push(bdat.answer);
          bdat = null;
          continue;
        }
        if (data !== null) {
          const end = buffered.indexOf('\r\n.\r\n');
          const atStart = data === '' && buffered.startsWith('.\r\n');
          if (end < 0 && !atStart) {
            data += buffered;
            buffered = '';
            break;
          }
          const cut = atStart ? 3 : end + 5;
          this.messages.push(data + buffered.slice(0, cut));
          buffered = buffered.slice(cut);
          data = null;
          out.push(script.answer?.('.') ?? '250 2.0.0 queued');
          continue;
        }
        const lf = buffered.indexOf('\r\n');
        if (lf < 0) break;
        const line = buffered.slice(0, lf);
        buffered = buffered.slice(lf + 2);
        lines.push(line);
        const verb = line.split(/[ :]/)[0]!.toUpperCase();
        const ext = ['scripted', ...(script.ehlo ?? ['PIPELINING'])];
        const answer =
          script.answer?.(line) ??
          (verb === 'EHLO'
            ? ext.map((l, i) => `250${i === ext.length - 1 ? ' ' : '-'}${l}`).join('\r\n')
            : verb === 'DATA'
              ? '354 go on'
              : verb === 'BDAT'
                ? '250 2.0.0 queued'
                : verb === 'QUIT'
                  ? '221 bye'
                  : '250 ok');
        if (verb === 'BDAT') {
          const [, size, last] = line.split(' ');
          bdat = { left: Number(size), last: last?.toUpperCase() === 'LAST', answer };
          continue;
        }
        out.push(answer);
        if (verb === 'DATA' && answer.startsWith('354')) data = '';
        if (verb === 'QUIT') {
          socket.end(`${answer}\r\n`);
          return;
        }
        if (answer.startsWith('421')) {
          socket.end(`${[...held, ...out].join('\r\n')}\r\n`);
          return;
        }
      }
      if (lines.length > 0) this.reads.push(lines);
      if (
        script.holdUntilData &&
        lines.some((l) => /^(MAIL|RCPT)/.test(l)) &&
        !lines.some((l) => l === 'DATA' || l.startsWith('BDAT '))
      ) {
        held.push(...out);
        return;
      }
      const all = [...held, ...out];
      held = [];
      if (all.length > 0) socket.write(`${all.join('\r\n')}\r\n`);
    });
  }
}
