import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';
import { rootCertificates } from 'node:tls';
import { classifyReply, parseReply, type Classification } from '../domain/classify.js';
import type { Reply, SmtpStage } from '../domain/outcome.js';

export interface SmtpOptions {
  /** EHLO name (server.hostname). */
  name: string;
  port: number;
  connectTimeout: number;
  greetingTimeout: number;
  commandTimeout: number;
  /** MTA-STS enforce: STARTTLS with a certificate valid for the MX name, or no delivery. */
  requireValidTls?: boolean;
  /** Extra trusted CAs (PEM) for requireValidTls and for the relay host. */
  extraCa?: string[];
}

/**
 * A relay host (outbound.relay): every message goes through it instead of to the recipient's MX.
 * Its certificate must be valid for `host`; on a submission port (implicitTls false) STARTTLS
 * is required and there is no plaintext fallback; AUTH PLAIN or LOGIN when `auth` is given.
 */
export interface RelayOptions {
  host: string;
  port: number;
  /** smtps: TLS from the first byte (port 465). smtp: STARTTLS required (port 587). */
  implicitTls: boolean;
  auth?: { user: string; pass: string };
}

/** What one SMTP transaction (MAIL, RCPT, DATA) ended in, for one recipient. */
export type TransactionResult =
  | { kind: 'accepted'; reply: Reply }
  | { kind: 'refused'; reply: Reply; permanent: boolean; stage: SmtpStage }
  /** The connection failed mid-transaction: nothing is known to have been accepted. */
  | { kind: 'broken'; reply: Reply };

interface NodemailerError extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
}

/** Transport failures without an SMTP reply, stated as the reply RFC 5321 3.8 says to assume. */
export function transportReply(e: NodemailerError): Reply {
  const tls = e.code === 'ETLS' || /certificate|CERT_|self[- ]signed|STARTTLS|TLS/i.test(e.message);
  const label: Classification = e.code === 'ETIMEDOUT' ? 'timeout' : tls ? 'tls_failure' : 'connection_failure';
  const enhanced = label === 'timeout' ? '4.4.1' : label === 'tls_failure' ? '4.7.5' : '4.4.2';
  return { code: 451, enhanced_code: enhanced, message: e.message.replace(/\s+/g, ' ').trim(), classification: label };
}

/** A reply from the remote server, or from nodemailer when it gave none. */
export function replyOf(e: NodemailerError): Reply {
  if (e.code === 'EAUTH') {
    const facts = parseReply(e.response ?? '', e.responseCode ?? 451);
    return { code: facts.code, enhanced_code: facts.enhanced_code || '4.7.0', message: e.message.replace(/\s+/g, ' ').trim(), classification: 'auth_failure' };
  }
  // A refused STARTTLS (a relay that does not speak it) is a TLS failure whatever the reply's code.
  if (!e.responseCode || !e.response || e.code === 'ETLS') return transportReply(e);
  const facts = parseReply(e.response, e.responseCode);
  return { ...facts, classification: classifyReply(facts) };
}

function acceptedReply(response: string): Reply {
  const facts = parseReply(response, 250);
  return { ...facts, classification: 'other' };
}

/** The stage nodemailer names in its error's `command` ("MAIL FROM", "RCPT TO", "DATA", or the message itself). */
function stageOf(command: string | undefined): SmtpStage {
  const c = (command ?? '').toUpperCase();
  return c.startsWith('MAIL') ? 'mail' : c.startsWith('RCPT') ? 'rcpt' : c.startsWith('EHLO') || c.startsWith('HELO') || c === 'CONN' ? 'connect' : 'data';
}

/** One SMTP connection to one MX address; several transactions may run over it in turn. */
export class SmtpSession {
  private dead = false;

  private constructor(
    private readonly conn: SMTPConnection,
    /** The MX host name (for events and TLS), not the address. */
    readonly mx: string,
  ) {
    conn.on('error', () => {
      this.dead = true;
    });
    conn.on('end', () => {
      this.dead = true;
    });
  }

  get secure(): boolean {
    return this.conn.secure;
  }

  get usable(): boolean {
    return !this.dead;
  }

  /**
   * Connects, reads the greeting, EHLO, STARTTLS when offered. An invalid certificate still
   * delivers unless TLS must be valid (MTA-STS enforce); a failed handshake is retried once
   * without TLS, as Postfix's `may` level and ZoneMTA do (docs/protocols.md 3).
   */
  static async open(mx: string, address: string, opts: SmtpOptions): Promise<SmtpSession> {
    try {
      return await SmtpSession.connect(mx, address, opts, false);
    } catch (e) {
      if ((e as NodemailerError).code === 'ETLS' && !opts.requireValidTls) return SmtpSession.connect(mx, address, opts, true);
      throw e;
    }
  }

  /**
   * Connects to the relay host: TLS (implicit or STARTTLS, never without) with a certificate valid
   * for its name, then AUTH. A refusal of the credentials is an `auth_failure`, deferred like
   * any failure to connect: the queue waits until the password is put right.
   */
  static async openRelay(address: string, relay: RelayOptions, opts: SmtpOptions): Promise<SmtpSession> {
    const conn = new SMTPConnection({
      host: address,
      port: relay.port,
      name: opts.name,
      secure: relay.implicitTls,
      requireTLS: !relay.implicitTls,
      connectionTimeout: opts.connectTimeout,
      greetingTimeout: opts.greetingTimeout,
      socketTimeout: opts.commandTimeout,
      tls: { rejectUnauthorized: true, servername: relay.host, minVersion: 'TLSv1.2', ca: [...rootCertificates, ...(opts.extraCa ?? [])] },
    } as SMTPConnection.Options);
    const session = await SmtpSession.started(conn, relay.host);
    if (!relay.auth) return session;
    const auth = relay.auth;
    await new Promise<void>((resolve, reject) =>
      conn.login({ user: auth.user, pass: auth.pass }, (e) => {
        if (!e) return resolve();
        conn.close();
        const err = e as NodemailerError;
        reject(
          Object.assign(new Error(`the relay host refused posthaste's credentials for ${auth.user}: ${err.response ?? err.message}`), {
            code: 'EAUTH',
            response: err.response,
            responseCode: err.responseCode,
          }),
        );
      }),
    );
    return session;
  }

  private static connect(mx: string, address: string, opts: SmtpOptions, ignoreTLS: boolean): Promise<SmtpSession> {
    const conn = new SMTPConnection({
      host: address,
      port: opts.port,
      name: opts.name,
      secure: false,
      ignoreTLS,
      requireTLS: !!opts.requireValidTls,
      opportunisticTLS: true,
      connectionTimeout: opts.connectTimeout,
      greetingTimeout: opts.greetingTimeout,
      socketTimeout: opts.commandTimeout,
      tls: opts.requireValidTls
        ? { rejectUnauthorized: true, servername: mx, minVersion: 'TLSv1.2', ca: [...rootCertificates, ...(opts.extraCa ?? [])] }
        : { rejectUnauthorized: false, servername: mx, minVersion: 'TLSv1' },
    } as SMTPConnection.Options);
    return SmtpSession.started(conn, mx);
  }

  /** Connects `conn` (greeting, EHLO, STARTTLS as its options say). */
  private static started(conn: SMTPConnection, mx: string): Promise<SmtpSession> {
    return new Promise((resolve, reject) => {
      let settled = false;
      conn.once('error', (e: Error) => {
        if (settled) return;
        settled = true;
        conn.close();
        reject(e);
      });
      conn.connect(() => {
        if (settled) return;
        settled = true;
        // SMTP is a dialogue of small writes: without TCP_NODELAY, Nagle and delayed ACKs stall
        // each transaction about 40 ms (measured: 44 ms per message to smtp-sink, 1 ms with it).
        // nodemailer does not expose its socket; `_socket` is its (stable) internal name.
        (conn as unknown as { _socket?: { setNoDelay?: (v: boolean) => void } })._socket?.setNoDelay?.(true);
        resolve(new SmtpSession(conn, mx));
      });
    });
  }

  /** One transaction: MAIL FROM the return path, RCPT the recipient, DATA the signed message. */
  send(from: string, to: string, message: Buffer): Promise<TransactionResult> {
    return new Promise((resolve) => {
      let done = false;
      const closed = (e?: NodemailerError) => finish({ kind: 'broken', reply: transportReply(e ?? Object.assign(new Error('connection closed by the remote server'), { code: 'ECONNECTION' })) });
      const onError = (e: NodemailerError) => closed(e);
      const onEnd = () => closed();
      const finish = (r: TransactionResult) => {
        if (done) return;
        done = true;
        this.conn.off('error', onError);
        this.conn.off('end', onEnd);
        if (r.kind === 'broken') this.dead = true;
        resolve(r);
      };
      if (this.dead) return closed();
      // nodemailer does not always call back when the peer drops the connection mid-DATA.
      this.conn.once('error', onError);
      this.conn.once('end', onEnd);
      this.conn.send({ from, to: [to] }, message, (err, info) => {
        if (!err) return finish({ kind: 'accepted', reply: acceptedReply(info.response) });
        const e = err as NodemailerError & { rejectedErrors?: NodemailerError[] };
        const rcptError = e.rejectedErrors?.[0];
        const source = rcptError ?? e;
        if (!source.responseCode) {
          this.dead = true;
          return finish({ kind: 'broken', reply: transportReply(source) });
        }
        const reply = replyOf(source);
        // 421 means the server is closing the channel: treat as temporary and stop using it.
        if (reply.code === 421) this.dead = true;
        finish({ kind: 'refused', reply, permanent: reply.code >= 500 && reply.code < 600, stage: rcptError ? 'rcpt' : stageOf(source.command) });
      });
    });
  }

  /** RSET between transactions; false when the connection cannot go on. */
  reset(): Promise<boolean> {
    if (this.dead) return Promise.resolve(false);
    return new Promise((resolve) => this.conn.reset((err) => resolve(!err)));
  }

  /** QUIT, and wait (briefly) for the server to close, so connection limits hold as the remote sees them. */
  close(): Promise<void> {
    if (this.dead) {
      this.conn.close();
      return Promise.resolve();
    }
    this.dead = true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.conn.close();
        resolve();
      }, 5000);
      this.conn.once('end', () => {
        clearTimeout(timer);
        resolve();
      });
      try {
        this.conn.quit();
      } catch {
        this.conn.close();
      }
    });
  }
}
