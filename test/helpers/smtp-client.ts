import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';

/** A raw SMTP client: sends exactly the bytes a test gives (smuggling sequences included) and reads replies. */
export class RawSmtp {
  private buf = '';
  private waiters: Array<(reply: string) => void> = [];
  closed = false;

  private constructor(private socket: net.Socket) {
    socket.on('data', (d) => this.take(d));
    socket.on('close', () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w('');
    });
    socket.on('error', () => undefined);
  }

  /** `localAddress`: the loopback address to connect from (a test of per-address limits). */
  static async connect(port: number, host = '127.0.0.1', localAddress?: string): Promise<RawSmtp> {
    const socket = net.connect({ port, host, ...(localAddress ? { localAddress } : {}) });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const c = new RawSmtp(socket);
    await c.reply(); // greeting
    return c;
  }

  private take(d: Buffer): void {
    this.buf += d.toString('latin1');
    this.pump();
  }

  /** STARTTLS, then TLS over the same socket with the options given; resolves once the handshake is done. */
  async startTls(options: tls.ConnectionOptions): Promise<tls.TLSSocket> {
    const go = await this.cmd('STARTTLS');
    if (!go.startsWith('220')) throw new Error(`STARTTLS refused: ${go}`);
    this.socket.removeAllListeners('data');
    const secure = tls.connect({ ...options, socket: this.socket });
    await once(secure, 'secureConnect');
    secure.on('data', (d: Buffer) => this.take(d));
    secure.on('error', () => undefined);
    this.socket = secure;
    return secure;
  }

  private pump(): void {
    // A reply ends with a line "ddd text" (no dash after the code).
    for (;;) {
      const m = /^(?:\d{3}-[^\n]*\n)*\d{3}(?: [^\n]*)?\r?\n/.exec(this.buf);
      if (!m || this.waiters.length === 0) return;
      this.buf = this.buf.slice(m[0].length);
      this.waiters.shift()!(m[0].trim());
    }
  }

  reply(): Promise<string> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.pump();
    });
  }

  async cmd(line: string): Promise<string> {
    this.socket.write(line + '\r\n');
    return this.reply();
  }

  /** Writes bytes without waiting for a reply; resolves once the socket can take more (a large DATA written in pieces). */
  async write(bytes: Buffer | string): Promise<void> {
    if (!this.socket.write(bytes)) await once(this.socket, 'drain');
  }

  async sendRaw(bytes: Buffer | string): Promise<string> {
    this.socket.write(bytes);
    return this.reply();
  }

  /** One message: MAIL, each RCPT (replies returned), DATA, the body bytes as given, then CRLF.CRLF. */
  async send(from: string, to: string[], body: Buffer | string): Promise<{ rcpt: string[]; data: string }> {
    await this.cmd(`MAIL FROM:<${from}>`);
    const rcpt: string[] = [];
    for (const r of to) rcpt.push(await this.cmd(`RCPT TO:<${r}>`));
    if (!rcpt.some((r) => r.startsWith('250'))) return { rcpt, data: '' };
    const go = await this.cmd('DATA');
    if (!go.startsWith('354')) return { rcpt, data: go };
    this.socket.write(body);
    const data = await this.sendRaw('\r\n.\r\n');
    return { rcpt, data };
  }

  close(): void {
    this.socket.end('QUIT\r\n');
  }
}
