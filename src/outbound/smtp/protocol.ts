// The SMTP client of the delivery path (RFC 5321): greeting, EHLO (HELO if refused), STARTTLS,
// AUTH PLAIN or LOGIN, and transactions with MAIL, RCPT and DATA sent in one write where the
// server offers PIPELINING (RFC 2920), as Postfix's client does, or MAIL, RCPT, BDAT and the
// message in one write where it offers CHUNKING too (RFC 3030). nodemailer's client waits for each
// reply before the next command: two round trips to the MX more per message, and more writes and
// reads (docs/delivery.md, "The SMTP client"). Errors carry `code`, the reply (`response`, `responseCode`) when there was
// one, and the command it answered. The replies are read off the connection by smtp-replies.ts.
import net from 'node:net';
import tls from 'node:tls';
import { crlfOnly, dataPieces } from './data.js';
import { isTlsError, type Reply, refused, replyError, SmtpError } from './errors.js';
import { ReplyReader } from './replies.js';

export interface SmtpClientOptions {
  host: string;
  port: number;
  /** EHLO name. */
  name: string;
  /** The source address to bind (outbound.pools); absent: the kernel's choice. */
  localAddress?: string;
  connectTimeout: number;
  greetingTimeout: number;
  /** Inactivity on the connection after the greeting (no byte read or written). */
  commandTimeout: number;
  /** TLS from the first byte (smtps). */
  implicitTls?: boolean;
  /** STARTTLS when offered; with `requireTls`, no TLS is no connection. */
  startTls: boolean;
  requireTls?: boolean;
  tls: tls.ConnectionOptions;
  /** BDAT (RFC 3030) where the server offers CHUNKING and PIPELINING; otherwise DATA. */
  chunking?: boolean;
  /** After the STARTTLS handshake: why the server is not the one expected (DANE), or null. */
  checkPeer?: (socket: tls.TLSSocket) => string | null;
}

const ASCII = /^[\x00-\x7f]*$/;

/** A connection to one SMTP server, one command or transaction at a time. */
export class SmtpClient {
  private socket!: net.Socket;
  private readonly reader = new ReplyReader(() => this.socket?.destroy());
  private extensions = new Map<string, string>();
  secure = false;
  /** Why the server's certificate did not verify (OpenSSL's code) when it was not required to; null otherwise. */
  authorizationError: string | null = null;
  /** The connection's local address, once connected (the source address TLS reports name). */
  localAddress: string | undefined;

  private constructor(private readonly opts: SmtpClientOptions) {}

  /** Connects, reads the greeting, EHLO, and STARTTLS as the options say. */
  static async connect(opts: SmtpClientOptions): Promise<SmtpClient> {
    const client = new SmtpClient(opts);
    try {
      await client.open();
      return client;
    } catch (e) {
      client.destroy();
      if (e instanceof SmtpError) e.localAddress ??= client.localAddress;
      throw e;
    }
  }

  get closed(): boolean {
    return this.reader.failure !== null;
  }

  has(extension: string): boolean {
    return this.extensions.has(extension);
  }

  /** The TLS version and cipher the connection uses (for the delivery log); null over plain TCP. */
  get tls(): { version: string; cipher: string } | null {
    if (!this.secure) return null;
    const socket = this.socket as tls.TLSSocket;
    return { version: socket.getProtocol() ?? 'unknown', cipher: socket.getCipher()?.name ?? 'unknown' };
  }

  private async open(): Promise<void> {
    const { opts } = this;
    this.attach(await this.dial());
    const greeting = await this.reader.read(opts.greetingTimeout, 'CONN');
    if (greeting.code !== 220) throw replyError('the server refused the connection', 'EPROTOCOL', 'CONN', greeting);
    this.socket.setTimeout(opts.commandTimeout);
    await this.hello();
    if (!this.secure && opts.startTls) {
      if (!this.has('STARTTLS')) {
        if (opts.requireTls)
          throw new SmtpError('the server does not offer STARTTLS, and TLS is required', 'ETLS', 'EHLO');
      } else {
        const r = await this.command('STARTTLS');
        if (r.code === 220) {
          await this.upgrade();
          await this.hello();
        } else if (opts.requireTls)
          throw replyError('the server refused STARTTLS, and TLS is required', 'ETLS', 'STARTTLS', r);
      }
    }
  }

  private dial(): Promise<net.Socket> {
    const { opts } = this;
    return new Promise((resolve, reject) => {
      const local = opts.localAddress ? { localAddress: opts.localAddress } : {};
      const socket = opts.implicitTls
        ? tls.connect({ ...opts.tls, host: opts.host, port: opts.port, ...local })
        : net.connect({ host: opts.host, port: opts.port, ...local });
      const timer = setTimeout(
        () => fail(new SmtpError(`connection to ${opts.host}:${opts.port} timed out`, 'ETIMEDOUT', 'CONN')),
        opts.connectTimeout,
      );
      const fail = (e: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(
          e instanceof SmtpError
            ? e
            : new SmtpError(e.message, opts.implicitTls && isTlsError(e) ? 'ETLS' : 'ECONNECTION', 'CONN'),
        );
      };
      socket.once('error', fail);
      socket.once(opts.implicitTls ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.off('error', fail);
        // SMTP is a dialogue of small writes: without TCP_NODELAY, Nagle and delayed ACKs stall
        // each transaction about 40 ms.
        socket.setNoDelay(true);
        this.localAddress = socket.localAddress;
        this.secure = !!opts.implicitTls;
        resolve(socket);
      });
    });
  }

  private attach(socket: net.Socket): void {
    this.socket = socket;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.reader.received(chunk));
    socket.on('error', (e) => this.reader.fail(new SmtpError(e.message, isTlsError(e) ? 'ETLS' : 'ECONNECTION')));
    socket.on('timeout', () => {
      this.reader.fail(new SmtpError('the server sent nothing for too long', 'ETIMEDOUT'));
      socket.destroy();
    });
    socket.on('close', () => this.reader.fail(new SmtpError('connection closed by the remote server', 'ECONNECTION')));
  }

  /** STARTTLS accepted: TLS over the same connection. */
  private upgrade(): Promise<void> {
    const plain = this.socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('error');
    plain.removeAllListeners('timeout');
    plain.removeAllListeners('close');
    plain.setTimeout(0);
    return new Promise((resolve, reject) => {
      const secure = tls.connect({ ...this.opts.tls, socket: plain });
      const timer = setTimeout(() => fail(new Error('TLS handshake timed out')), this.opts.commandTimeout);
      const fail = (e: Error) => {
        clearTimeout(timer);
        secure.destroy();
        const err = new SmtpError(`STARTTLS: ${e.message}`, 'ETLS', 'STARTTLS');
        this.reader.fail(err);
        reject(err);
      };
      secure.once('error', fail);
      secure.once('secureConnect', () => {
        let wrong: string | null | undefined;
        try {
          wrong = this.opts.checkPeer?.(secure);
        } catch (e) {
          wrong = `the server's certificate could not be checked: ${(e as Error).message}`;
        }
        if (wrong) return fail(new Error(wrong));
        clearTimeout(timer);
        secure.off('error', fail);
        this.secure = true;
        if (!secure.authorized) this.authorizationError = String(secure.authorizationError ?? 'unverified');
        this.attach(secure);
        secure.setTimeout(this.opts.commandTimeout);
        resolve();
      });
    });
  }

  private async hello(): Promise<void> {
    let r = await this.command(`EHLO ${this.opts.name}`);
    this.extensions.clear();
    if (r.code === 250) {
      for (const line of r.text.split('\n').slice(1)) {
        const m = /^\d{3}[ -]([A-Za-z0-9-]+)[ =]?(.*)$/.exec(line);
        if (m) this.extensions.set(m[1]!.toUpperCase(), m[2]!.trim().toUpperCase());
      }
      return;
    }
    r = await this.command(`HELO ${this.opts.name}`);
    if (r.code !== 250) throw replyError('the server refused HELO', 'EPROTOCOL', 'HELO', r);
  }

  /** AUTH PLAIN, or LOGIN when only that is offered. The credentials are never in an error. */
  async login(user: string, pass: string): Promise<void> {
    const offered = (this.extensions.get('AUTH') ?? '').split(/\s+/);
    const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
    let r: Reply;
    if (offered.includes('PLAIN')) r = await this.command(`AUTH PLAIN ${b64(`\0${user}\0${pass}`)}`, 'AUTH PLAIN');
    else if (offered.includes('LOGIN')) {
      r = await this.command('AUTH LOGIN');
      if (r.code === 334) r = await this.command(b64(user), 'AUTH LOGIN');
      if (r.code === 334) r = await this.command(b64(pass), 'AUTH LOGIN');
    } else
      throw new SmtpError(
        `the server offers no AUTH mechanism posthaste speaks (PLAIN, LOGIN): "${offered.join(' ')}"`,
        'EAUTH',
        'AUTH',
      );
    if (r.code !== 235) throw replyError('authentication failed', 'EAUTH', 'AUTH', r);
  }

  /**
   * One transaction. Resolves with the final reply to the message (2xx), or rejects with the
   * first refusal (its command: "MAIL FROM", "RCPT TO", "DATA" or "DATA END") or a transport error.
   */
  async send(from: string, to: string, message: Buffer): Promise<string> {
    const utf8 = !ASCII.test(from) || !ASCII.test(to);
    if (utf8 && !this.has('SMTPUTF8'))
      throw new SmtpError(
        'the address needs SMTPUTF8 (RFC 6531), which the server does not offer',
        'EENVELOPE',
        'MAIL FROM',
        '553 5.6.7 the receiving server does not support internationalised addresses (SMTPUTF8)',
      );
    // RFC 1870: a server that states its limit is not sent a message over it (Postfix bounces it
    // as "message size exceeds fixed limit"), and one that offers SIZE is told the size up front.
    const limit = Number(this.extensions.get('SIZE') ?? 0);
    if (limit > 0 && message.length > limit)
      throw new SmtpError(
        'the message is larger than the server accepts',
        'EENVELOPE',
        'MAIL FROM',
        `552 5.3.4 the message (${message.length} bytes) is over the receiving server's limit of ${limit} bytes`,
      );
    const mail = `MAIL FROM:<${from}>${this.has('SIZE') ? ` SIZE=${message.length}` : ''}${utf8 ? ' SMTPUTF8' : ''}`;
    const rcpt = `RCPT TO:<${to}>`;
    if (this.opts.chunking && this.has('PIPELINING') && this.has('CHUNKING') && crlfOnly(message))
      return this.sendChunked(mail, rcpt, message);
    let data: Reply;
    if (this.has('PIPELINING')) {
      this.write(`${mail}\r\n${rcpt}\r\nDATA\r\n`);
      const envelope = await this.readPipelined('DATA');
      const refusal = envelope.refusal;
      data = envelope.last;
      if (refusal) {
        // RFC 2920 3.1: a DATA accepted though the envelope was not gets an empty message, ended at once.
        if (data.code === 354) await this.command('.', 'DATA END').catch(() => undefined);
        throw refusal;
      }
    } else {
      const m = await this.command(mail, 'MAIL FROM');
      const mailRefused = refused(m);
      if (mailRefused) throw mailRefused;
      const rcptRefused = refused(m, await this.command(rcpt, 'RCPT TO'));
      if (rcptRefused) throw rcptRefused;
      data = await this.command('DATA');
    }
    if (data.code !== 354) throw replyError('DATA refused', 'EPROTOCOL', 'DATA', data);
    this.writePieces(dataPieces(message));
    const end = await this.reader.read(undefined, 'DATA END');
    if (end.code < 200 || end.code > 299) throw replyError('the message was refused', 'EPROTOCOL', 'DATA END', end);
    return end.text;
  }

  /**
   * A transaction in one write and one round trip (RFC 3030): MAIL, RCPT and `BDAT <size> LAST`
   * pipelined, the message after them as it is (a chunk of stated size is not dot-stuffed). The
   * server reads a chunk whatever became of the envelope, and answers BDAT with the transaction's
   * outcome; after a refused envelope that answer is only read, to keep the dialogue in step.
   */
  private async sendChunked(mail: string, rcpt: string, message: Buffer): Promise<string> {
    this.writePieces([`${mail}\r\n${rcpt}\r\nBDAT ${message.length} LAST\r\n`, message]);
    const { refusal, last: end } = await this.readPipelined('BDAT');
    if (refusal) throw refusal;
    if (end.code === 500 || end.code === 502) {
      // It offered CHUNKING but does not know BDAT (a broken implementation, or something in
      // between rewriting the dialogue): the message may have been read as commands, so the
      // connection is not used again, and the answer says nothing about the message.
      const e = replyError('the server offered CHUNKING but does not take BDAT', 'ECHUNKING', 'BDAT', end);
      this.reader.fail(e);
      throw e;
    }
    if (end.code < 200 || end.code > 299) throw replyError('the message was refused', 'EPROTOCOL', 'BDAT', end);
    return end.text;
  }

  /**
   * The replies to a pipelined MAIL FROM, RCPT TO and `last` (DATA or BDAT), which come in order.
   * After a refusal the rest are read only to keep the dialogue in step (the server may as well
   * close the connection, as after a 421): `refusal` is then the envelope's, and `last` whatever
   * came, if anything (code 0).
   */
  private async readPipelined(last: string): Promise<{ refusal: SmtpError | null; last: Reply }> {
    const m = await this.reader.read(undefined, 'MAIL FROM');
    const r = m.code === 250 ? await this.reader.read(undefined, 'RCPT TO') : await this.reader.readAfter();
    const refusal = refused(m, r);
    return { refusal, last: refusal ? await this.reader.readAfter() : await this.reader.read(undefined, last) };
  }

  /** RSET; false when the connection cannot go on. */
  async reset(): Promise<boolean> {
    try {
      return (await this.command('RSET')).code === 250;
    } catch {
      return false;
    }
  }

  /** QUIT, and wait (at most `ms`) for the server to close. */
  async quit(ms: number): Promise<void> {
    if (this.closed) return;
    const closed = new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    this.write('QUIT\r\n');
    const timer = setTimeout(() => this.destroy(), ms);
    await closed;
    clearTimeout(timer);
  }

  destroy(): void {
    this.socket?.destroy();
    this.reader.fail(new SmtpError('connection closed', 'ECONNECTION'));
  }

  private async command(line: string, name = line.split(' ')[0]!): Promise<Reply> {
    this.write(`${line}\r\n`);
    return this.reader.read(undefined, name);
  }

  private write(text: string): void {
    if (!this.reader.failure) this.socket.write(text);
  }

  /** Pieces in one write (corked), none of them copied. */
  private writePieces(pieces: Array<Buffer | string>): void {
    if (this.reader.failure) return;
    const s = this.socket;
    s.cork();
    for (const piece of pieces) s.write(piece);
    s.uncork();
  }
}
