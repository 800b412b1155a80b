import { Transform, type TransformCallback } from 'node:stream';

/**
 * Flags a bare LF or a bare CR anywhere in DATA (SMTP smuggling defence, as Postfix's
 * `smtpd_forbid_bare_newline = reject`). smtp-server passes them through; the message is then
 * refused with 550 5.5.2 once the stream has been drained. Tracks the previous byte across chunks.
 */
export class BareNewlineCheck extends Transform {
  found = false;
  private prevCR = false;

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (!this.found) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (this.prevCR && b !== 0x0a) this.found = true;
        if (b === 0x0a && !this.prevCR) this.found = true;
        this.prevCR = b === 0x0d;
        if (this.found) break;
      }
    }
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    if (this.prevCR) this.found = true;
    cb();
  }
}
