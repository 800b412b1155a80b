// The replies of an SMTP server as the delivery path's client reads them off the connection
// (RFC 5321 4.2): lines gathered into replies ("ddd-text" continues one, "ddd text" or "ddd" ends
// it), each handed to the next reader waiting, in order, or kept until one reads. The first failure
// of the connection fails every reader waiting and every read after.
import { type Reply, SmtpError, withCommand } from './errors.js';

const MAX_REPLY = 64 * 1024;

export class ReplyReader {
  private buffered = '';
  private lines: string[] = [];
  private replies: Reply[] = [];
  private waiting: Array<{ resolve: (r: Reply) => void; reject: (e: Error) => void }> = [];
  private error: Error | null = null;

  /** `giveUp` lets go of the connection (destroys its socket) at the first failure. */
  constructor(private readonly giveUp: () => void) {}

  /** Why the connection cannot be used any more; null while it can. */
  get failure(): Error | null {
    return this.error;
  }

  /** The next reply; `command` is the command it answers, named in the error if none comes. */
  read(timeoutMs?: number, command?: string): Promise<Reply> {
    const ready = this.replies.shift();
    if (ready) return Promise.resolve(ready);
    if (this.error) return Promise.reject(withCommand(this.error, command));
    return new Promise((resolve, reject) => {
      const timer = timeoutMs
        ? setTimeout(() => this.fail(new SmtpError(`no reply within ${timeoutMs} ms`, 'ETIMEDOUT', command)), timeoutMs)
        : null;
      this.waiting.push({
        resolve: (r) => {
          if (timer) clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          if (timer) clearTimeout(timer);
          reject(withCommand(e, command));
        },
      });
    });
  }

  /** A reply read after one that failed the transaction, if one comes (code 0 if none). */
  async readAfter(): Promise<Reply> {
    try {
      return await this.read();
    } catch {
      return { code: 0, text: '' };
    }
  }

  /** Text as it arrives from the server. */
  received(chunk: string): void {
    this.buffered += chunk;
    for (let lf = this.buffered.indexOf('\n'); lf >= 0; lf = this.buffered.indexOf('\n')) {
      const line = this.buffered.slice(0, lf).replace(/\r$/, '');
      this.buffered = this.buffered.slice(lf + 1);
      this.lines.push(line);
      // The last line of a reply is "ddd text" or "ddd"; "ddd-text" continues it.
      if (line.length < 4 || line[3] !== '-') {
        const code = Number(line.slice(0, 3));
        const text = this.lines.join('\n');
        this.lines = [];
        if (!/^\d{3}$/.test(line.slice(0, 3))) {
          this.fail(new SmtpError(`not an SMTP reply: ${text.slice(0, 200)}`, 'EPROTOCOL'));
          return;
        }
        const waiter = this.waiting.shift();
        if (waiter) waiter.resolve({ code, text });
        else this.replies.push({ code, text });
      }
    }
    if (this.buffered.length > MAX_REPLY || this.lines.length > 1000)
      this.fail(new SmtpError('the server sent a reply too long to be one', 'EPROTOCOL'));
  }

  /** The connection cannot go on: the first failure stands, and every reader waiting gets it. */
  fail(e: Error): void {
    if (this.error) return;
    this.error = e;
    this.giveUp();
    for (const w of this.waiting.splice(0)) w.reject(e);
  }
}
