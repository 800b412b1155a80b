import { Worker } from 'node:worker_threads';
import { UnsendableMessage } from '../../domain/errors.js';
import type { RequestFormat } from '../../store/model.js';
import type { DkimKey } from './dkim.js';
import type { SignJob, SignReply } from './signer-worker.js';

export interface SignInput {
  /** The stored request: the body's bytes as received; see readStoredRequest (domain/stored-request.ts). */
  request: Uint8Array;
  /** `mime`: the request is the message itself (submitted over SMTP), signed as it is, never composed. */
  format: RequestFormat;
  messageId: string;
  createdAt: number;
  raw: Buffer | null;
  key: DkimKey;
  /** Header fields of one recipient's own (the List-Unsubscribe fields), put before the message's and signed with them; `raw` stays without them. */
  fields?: string;
}

export interface Signed {
  /** Set when the message was composed now (first attempt of a send request): stored while a recipient may still be retried, so a retry sends the same bytes. The tail of `signed`. */
  raw: Buffer | null;
  signed: Buffer;
}

/**
 * Composition and DKIM signing on worker threads. RSA signing and the key parsing mailauth does
 * on every signature are most of delivery's CPU (measured: about half), and on the event loop
 * they would delay every SMTP conversation in flight.
 */
export class SignerPool {
  private workers: Worker[] = [];
  private next = 0;
  private seq = 0;
  private pending = new Map<number, { resolve: (s: Signed) => void; reject: (e: Error) => void }>();

  constructor(private readonly size: number) {}

  /** Threads start on the first message to sign: a daemon that only accepts or receives never pays for them. */
  private start(): void {
    for (let i = 0; i < Math.max(1, this.size); i++) {
      const w = new Worker(new URL('./signer-worker.js', import.meta.url));
      w.on('message', (r: SignReply) => this.settle(r));
      w.on('error', (e) => {
        for (const p of this.pending.values()) p.reject(e);
        this.pending.clear();
      });
      w.unref();
      this.workers.push(w);
    }
  }

  sign(input: SignInput): Promise<Signed> {
    if (this.workers.length === 0) this.start();
    const id = ++this.seq;
    const job: SignJob = {
      id,
      request: input.request,
      format: input.format,
      messageId: input.messageId,
      createdAt: input.createdAt,
      raw: input.raw,
      key: input.key,
      fields: input.fields ?? null,
    };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const w = this.workers[this.next++ % this.workers.length]!;
      w.ref();
      w.postMessage(job);
    });
  }

  private settle(r: SignReply): void {
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (this.pending.size === 0) for (const w of this.workers) w.unref();
    if (r.ok) {
      const signed = Buffer.from(r.signed.buffer, r.signed.byteOffset, r.signed.byteLength);
      p.resolve({ raw: r.rawAt === null ? null : signed.subarray(r.rawAt), signed });
    } else p.reject(r.permanent ? new UnsendableMessage(r.error) : new Error(r.error));
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
