import type net from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

export interface ReceivedMessage {
  from: string;
  to: string[];
  data: Buffer;
  secure: boolean;
  /** The client's address and the name it gave in EHLO/HELO, as a receiver checking SPF takes them. */
  remoteAddress: string;
  helo: string;
}

/** What the remote MX answers for one recipient on one attempt: 250 unless a code is given. */
export type RcptScript = (
  rcpt: string,
  attempt: number,
  /** The client's address (a receiver may answer each sending address its own way). */
  remoteAddress: string,
) => { rcpt?: [number, string]; data?: [number, string] } | undefined;

/**
 * A real SMTP server on loopback playing a remote MX (smtp-server, STARTTLS with its built-in
 * self-signed certificate). Its answers are scripted per recipient; it records what it accepted
 * and how many connections it ever had open at once.
 */
export class TestMx {
  received: ReceivedMessage[] = [];
  attempts = new Map<string, number>();
  open = 0;
  peakOpen = 0;
  /** Connections open now, and the most ever open at once, per client address. */
  openFrom = new Map<string, number>();
  peakFrom = new Map<string, number>();
  connections = 0;
  script: RcptScript = () => undefined;
  /** Milliseconds to wait before answering the end of DATA (a slow MX keeps connections open). */
  dataDelayMs = 0;
  /** A message to this recipient is answered only once the promise settles (the sender waits on the reply). */
  holdData: (rcpt: string) => Promise<void> | undefined = () => undefined;
  private server: SMTPServer;
  port = 0;

  constructor(
    readonly host = '127.0.0.1',
    tls?: { key: Buffer; cert: Buffer },
  ) {
    this.server = new SMTPServer({
      ...(tls ? { key: tls.key, cert: tls.cert } : {}),
      disableReverseLookup: true, // never a PTR query off the machine
      authOptional: true,
      banner: 'test MX',
      size: 50 * 1024 * 1024,
      logger: false,
      onConnect: (session, cb) => {
        this.connections++;
        this.open++;
        this.peakOpen = Math.max(this.peakOpen, this.open);
        const from = (this.openFrom.get(session.remoteAddress) ?? 0) + 1;
        this.openFrom.set(session.remoteAddress, from);
        this.peakFrom.set(session.remoteAddress, Math.max(from, this.peakFrom.get(session.remoteAddress) ?? 0));
        cb();
      },
      onClose: (session) => {
        this.open--;
        this.openFrom.set(session.remoteAddress, (this.openFrom.get(session.remoteAddress) ?? 1) - 1);
      },
      onRcptTo: (address, session, cb) => {
        const rcpt = address.address.toLowerCase();
        const n = (this.attempts.get(rcpt) ?? 0) + 1;
        this.attempts.set(rcpt, n);
        const answer = this.script(rcpt, n, session.remoteAddress)?.rcpt;
        if (answer) return cb(Object.assign(new Error(answer[1]), { responseCode: answer[0] }));
        cb();
      },
      onData: (stream, session: SMTPServerSession, cb) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const to = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
          const answer = this.script(to[0]!, this.attempts.get(to[0]!) ?? 1, session.remoteAddress)?.data;
          if (answer) return cb(Object.assign(new Error(answer[1]), { responseCode: answer[0] }));
          this.received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to,
            data: Buffer.concat(chunks),
            secure: session.secure,
            remoteAddress: session.remoteAddress,
            helo: session.hostNameAppearsAs,
          });
          const hold = this.holdData(to[0]!) ?? Promise.resolve();
          void hold.then(() => setTimeout(() => cb(null, 'Ok: queued as TEST'), this.dataDelayMs));
        });
      },
    });
    this.server.on('error', () => undefined);
  }

  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, this.host, () => resolve()));
    this.port = (this.server.server.address() as net.AddressInfo).port;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
