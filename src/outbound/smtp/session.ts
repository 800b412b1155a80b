import type { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { type ConnectionOptions, rootCertificates, type TLSSocket } from 'node:tls';
import { type Classification, classifyReply, parseReply } from '../../domain/classify.js';
import type { Reply, SmtpStage } from '../../domain/outcome.js';
import type { Clock } from '../../lib/clock.js';
import { presentedChain } from '../routing/dane.js';
import type { SourceAddress } from '../source.js';
import { SmtpError } from './errors.js';
import { SmtpClient } from './protocol.js';

export interface SmtpOptions {
  /** EHLO name (server.hostname). */
  name: string;
  port: number;
  connectTimeout: number;
  greetingTimeout: number;
  commandTimeout: number;
  /** MTA-STS enforce: STARTTLS with a certificate valid for the MX name, or no delivery. */
  requireValidTls?: boolean;
  /** MTA-STS testing: the certificate checked as enforce would, not refused (what it lacks is for the TLS reports). */
  auditTls?: boolean;
  /** Extra trusted CAs (PEM) for requireValidTls and for the relay host. */
  extraCa?: string[];
  /** outbound.chunking: BDAT (RFC 3030) where the server offers it with PIPELINING. */
  chunking?: boolean;
  /** The hosts not to send BDAT for a while; without it, a refusal is forgotten with the connection. */
  bdatMemory?: BdatMemory;
  /**
   * DANE (RFC 7672) for this host: STARTTLS required with no fallback, and `verify` checks the chain
   * presented (null: TLSA records of which none is usable, so TLS without authentication). It
   * decides instead of `requireValidTls`: where there are TLSA records, the WebPKI is not asked.
   */
  dane?: { verify: ((chain: X509Certificate[]) => string | null) | null };
  /** The source address to bind and the name to say in EHLO from it (outbound.pools), instead of the kernel's choice and `name`. */
  source?: SourceAddress;
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

/** Where a transaction went, for the delivery log: the host (MX or relay) by name, the address and port connected to, and its TLS. */
export interface Via {
  host: string;
  address: string;
  port: number;
  /** The TLS version and cipher; null when the connection was not encrypted. */
  tls: { version: string; cipher: string } | null;
  /** The certificate was checked (DANE, MTA-STS enforce, the relay host), not only encrypted to. */
  verified: boolean;
  /** The pool and source address it went from (outbound.pools). */
  source?: { pool: string; ip: string };
}

/** What one SMTP transaction (MAIL, RCPT, DATA) ended in, for one recipient. */
export type TransactionResult =
  | { kind: 'accepted'; reply: Reply }
  | { kind: 'refused'; reply: Reply; permanent: boolean; stage: SmtpStage }
  /** The connection failed mid-transaction: nothing is known to have been accepted. */
  | { kind: 'broken'; reply: Reply };

/** What a failure may carry: an SmtpError, or any Error from below it. */
interface SmtpFailure extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
}

/**
 * Transport failures without an SMTP reply, stated as the reply RFC 5321 3.8 says to assume. The
 * client (smtp-protocol.ts) marks every TLS failure ETLS: a refused or missing STARTTLS it needed, a
 * failed handshake, a certificate that does not verify.
 */
export function transportReply(e: SmtpFailure): Reply {
  const label: Classification =
    e.code === 'ETIMEDOUT' ? 'timeout' : e.code === 'ETLS' ? 'tls_failure' : 'connection_failure';
  const enhanced = label === 'timeout' ? '4.4.1' : label === 'tls_failure' ? '4.7.5' : '4.4.2';
  return { code: 451, enhanced_code: enhanced, message: e.message.replace(/\s+/g, ' ').trim(), classification: label };
}

/** A reply from the remote server, or the one RFC 5321 says to assume when there was none. */
export function replyOf(e: SmtpFailure): Reply {
  if (e.code === 'EAUTH') {
    const facts = parseReply(e.response ?? '', e.responseCode ?? 451);
    return {
      code: facts.code,
      enhanced_code: facts.enhanced_code || '4.7.0',
      message: e.message.replace(/\s+/g, ' ').trim(),
      classification: 'auth_failure',
    };
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

/** The stage of the command a refusal answered ("MAIL FROM", "RCPT TO", "DATA", "DATA END", "CONN", "EHLO"...). */
function stageOf(command: string | undefined): SmtpStage {
  const c = (command ?? '').toUpperCase();
  return c.startsWith('MAIL')
    ? 'mail'
    : c.startsWith('RCPT')
      ? 'rcpt'
      : c.startsWith('EHLO') || c.startsWith('HELO') || c === 'CONN'
        ? 'connect'
        : 'data';
}

/**
 * TLS options for an MX or relay host: its name for SNI and for the certificate check. A host given
 * as an address is checked against the certificate's IP addresses and sent no SNI (RFC 6066 3).
 */
function tlsFor(host: string, valid: boolean, extraCa: string[] | undefined, audit = false): ConnectionOptions {
  const name = isIP(host) ? { host } : { servername: host };
  const ca = valid || audit ? { ca: [...rootCertificates, ...(extraCa ?? [])] } : {};
  return valid
    ? { ...name, rejectUnauthorized: true, minVersion: 'TLSv1.2', ...ca }
    : { ...name, rejectUnauthorized: false, minVersion: 'TLSv1', ...ca };
}

/**
 * Hosts that offered CHUNKING and then answered BDAT as an unknown command (ECHUNKING), and until
 * when they are sent DATA instead: a day on the injected clock, so a server put right is given BDAT
 * again. One for the process, like the MX cache; at most `maxHosts`, the oldest forgotten first.
 */
export class BdatMemory {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly forMs = 24 * 3_600_000,
    private readonly maxHosts = 10_000,
  ) {}

  /** Whether BDAT may be tried with this host. */
  allows(host: string): boolean {
    const key = host.toLowerCase();
    const until = this.until.get(key);
    if (until === undefined) return true;
    if (until > this.clock.now()) return false;
    this.until.delete(key);
    return true;
  }

  refused(host: string): void {
    const key = host.toLowerCase();
    this.until.delete(key);
    if (this.until.size >= this.maxHosts) this.until.delete(this.until.keys().next().value!);
    this.until.set(key, this.clock.now() + this.forMs);
  }
}

/** The EHLO name, and the source address to bind when a pool's address was chosen. */
const bindTo = (opts: SmtpOptions): { name: string; localAddress?: string } =>
  opts.source ? { name: opts.source.ehlo, localAddress: opts.source.ip } : { name: opts.name };

const sourceOf = (opts: SmtpOptions) => (opts.source ? { pool: opts.source.pool, ip: opts.source.ip } : undefined);

const chunkingFor = (host: string, opts: SmtpOptions): boolean =>
  !!opts.chunking && (opts.bdatMemory?.allows(host) ?? true);

/** One SMTP connection to one MX address; several transactions may run over it in turn. */
export class SmtpSession {
  private constructor(
    private readonly client: SmtpClient,
    /** The MX host name (for events and TLS), not the address. */
    readonly mx: string,
    private readonly bdatMemory: BdatMemory | undefined,
    /** TLS was required with the certificate checked (DANE records or the WebPKI), not merely offered. */
    private readonly checked: boolean,
    /** The address and port connected to. */
    private readonly address: string,
    private readonly port: number,
    /** The pool and address it was opened from (outbound.pools). */
    readonly source?: { pool: string; ip: string },
    /** The TLS failure it fell back to plain text from, when it did (for TLS reports). */
    readonly tlsFallback?: SmtpError,
  ) {}

  /** The connection's local address (the source address TLS reports name). */
  get localAddress(): string {
    return this.source?.ip ?? this.client.localAddress ?? '';
  }

  /** Where this session's transactions go, for the delivery log. */
  get via(): Via {
    const via = {
      host: this.mx,
      address: this.address,
      port: this.port,
      tls: this.client.tls,
      verified: this.verified,
    };
    return this.source ? { ...via, source: this.source } : via;
  }

  /** Over TLS whose certificate was checked: DANE, MTA-STS enforce, or the relay host. */
  get verified(): boolean {
    return this.checked && this.client.secure;
  }

  get secure(): boolean {
    return this.client.secure;
  }

  /** Why the certificate would not have been accepted (auditTls), or null. */
  get auditError(): string | null {
    return this.client.authorizationError;
  }

  get usable(): boolean {
    return !this.client.closed;
  }

  /**
   * Connects, reads the greeting, EHLO, STARTTLS when offered. An invalid certificate still
   * delivers unless TLS must be valid (MTA-STS enforce); a failed handshake is retried once
   * without TLS, as Postfix's `may` level and ZoneMTA do (docs/protocols.md 3).
   */
  static async open(mx: string, address: string, opts: SmtpOptions): Promise<SmtpSession> {
    // Under DANE the TLSA records decide, not the WebPKI: DANE-EE certificates are often self-signed.
    const webPki = !!opts.requireValidTls && !opts.dane;
    const requireTls = webPki || !!opts.dane;
    const verify = opts.dane?.verify;
    const connect = (startTls: boolean) =>
      SmtpClient.connect({
        host: address,
        port: opts.port,
        ...bindTo(opts),
        connectTimeout: opts.connectTimeout,
        greetingTimeout: opts.greetingTimeout,
        commandTimeout: opts.commandTimeout,
        startTls,
        requireTls,
        tls: tlsFor(mx, webPki, opts.extraCa, opts.auditTls),
        chunking: chunkingFor(mx, opts),
        ...(verify ? { checkPeer: (socket: TLSSocket) => verify(presentedChain(socket)) } : {}),
      });
    const session = (client: SmtpClient, checked: boolean, fallback?: SmtpError) =>
      new SmtpSession(client, mx, opts.bdatMemory, checked, address, opts.port, sourceOf(opts), fallback);
    try {
      return session(await connect(true), webPki || !!verify);
    } catch (e) {
      if ((e as SmtpFailure).code === 'ETLS' && !requireTls)
        return session(await connect(false), false, e as SmtpError);
      throw e;
    }
  }

  /**
   * Connects to the relay host: TLS (implicit or STARTTLS, never without) with a certificate valid
   * for its name, then AUTH. A refusal of the credentials is an `auth_failure`, deferred like
   * any failure to connect: the queue waits until the password is put right.
   */
  static async openRelay(address: string, relay: RelayOptions, opts: SmtpOptions): Promise<SmtpSession> {
    const client = await SmtpClient.connect({
      host: address,
      port: relay.port,
      ...bindTo(opts),
      connectTimeout: opts.connectTimeout,
      greetingTimeout: opts.greetingTimeout,
      commandTimeout: opts.commandTimeout,
      implicitTls: relay.implicitTls,
      startTls: !relay.implicitTls,
      requireTls: true,
      tls: tlsFor(relay.host, true, opts.extraCa),
      chunking: chunkingFor(relay.host, opts),
    });
    if (relay.auth) {
      const { user, pass } = relay.auth;
      try {
        await client.login(user, pass);
      } catch (e) {
        client.destroy();
        const err = e as SmtpFailure;
        throw new SmtpError(
          `the relay host refused posthaste's credentials for ${user}: ${err.response ?? err.message}`,
          'EAUTH',
          'AUTH',
          err.response,
        );
      }
    }
    return new SmtpSession(client, relay.host, opts.bdatMemory, true, address, relay.port, sourceOf(opts));
  }

  /** One transaction: MAIL FROM the return path, RCPT the recipient, DATA the signed message. */
  async send(from: string, to: string, message: Buffer): Promise<TransactionResult> {
    if (this.client.closed)
      return {
        kind: 'broken',
        reply: transportReply(new SmtpError('connection closed by the remote server', 'ECONNECTION')),
      };
    try {
      return { kind: 'accepted', reply: acceptedReply(await this.client.send(from, to, message)) };
    } catch (e) {
      const err = e as SmtpFailure;
      if (err.code === 'ECHUNKING') {
        // Not an answer about the message: deferred, and the next connection to the host sends DATA.
        this.bdatMemory?.refused(this.mx);
        this.client.destroy();
        const said = (err.response ?? '').replace(/\s+/g, ' ').trim();
        return {
          kind: 'broken',
          reply: {
            code: 451,
            enhanced_code: '4.5.0',
            message: `${this.mx} offered CHUNKING but answered BDAT with "${said}"; it is sent DATA for a day`,
            classification: 'other',
          },
        };
      }
      if (!err.responseCode) {
        this.client.destroy();
        return { kind: 'broken', reply: transportReply(err) };
      }
      const reply = replyOf(err);
      // 421 means the server is closing the channel: treat as temporary and stop using it.
      if (reply.code === 421) this.client.destroy();
      return { kind: 'refused', reply, permanent: reply.code >= 500 && reply.code < 600, stage: stageOf(err.command) };
    }
  }

  /** RSET between transactions; false when the connection cannot go on. */
  reset(): Promise<boolean> {
    return this.client.closed ? Promise.resolve(false) : this.client.reset();
  }

  /** QUIT, and wait (briefly) for the server to close, so connection limits hold as the remote sees them. */
  close(): Promise<void> {
    return this.client.quit(5000);
  }
}
