// What an SMTP exchange of the delivery path's client can fail with, and how a reply becomes an error.

/** ECHUNKING: the server offered CHUNKING and then answered BDAT as a command it does not know. */
export type SmtpErrorCode = 'ECONNECTION' | 'ETIMEDOUT' | 'ETLS' | 'EAUTH' | 'EPROTOCOL' | 'EENVELOPE' | 'ECHUNKING';

export class SmtpError extends Error {
  /** The local address of the connection it failed on, once connected (for TLS reports). */
  localAddress?: string;

  constructor(
    message: string,
    readonly code: SmtpErrorCode,
    /** The command answered ("CONN" for the greeting). */
    readonly command?: string,
    /** The whole reply, its lines joined with LF, when there was one. */
    readonly response?: string,
  ) {
    super(message);
  }

  get responseCode(): number | undefined {
    return this.response ? Number(this.response.slice(0, 3)) : undefined;
  }
}

/** A reply as the client reads it: its code, and its lines joined with LF. */
export interface Reply {
  code: number;
  text: string;
}

/** The refusal of MAIL FROM or RCPT TO, if either was refused. */
export function refused(mail: Reply, rcpt?: Reply): SmtpError | null {
  if (mail.code !== 250) return replyError('MAIL FROM refused', 'EENVELOPE', 'MAIL FROM', mail);
  if (rcpt && rcpt.code !== 250 && rcpt.code !== 251)
    return replyError('RCPT TO refused', 'EENVELOPE', 'RCPT TO', rcpt);
  return null;
}

export function replyError(what: string, code: SmtpErrorCode, command: string, r: Reply): SmtpError {
  return new SmtpError(`${what}: ${r.text.replace(/\s+/g, ' ')}`, code, command, r.text);
}

export function withCommand(e: Error, command?: string): Error {
  if (!(e instanceof SmtpError) || !command || e.command) return e;
  return new SmtpError(e.message, e.code, command, e.response);
}

export function isTlsError(e: Error & { code?: string }): boolean {
  return /^ERR_(SSL|TLS)|CERT|_KEY_|SELF_SIGNED/.test(e.code ?? '') || /SSL|TLS|certificate/i.test(e.message);
}
