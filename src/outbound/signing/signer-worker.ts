// A signing thread: composes (a send request not yet composed) and DKIM-signs messages off the event loop.
import { parentPort } from 'node:worker_threads';
import { UnsendableMessage } from '../../domain/errors.js';
import { readStoredRequest } from '../../domain/stored-request.js';
import { reclaimAfter } from '../../lib/reclaim.js';
import { composeMessage } from '../../mime/compose.js';
import type { RequestFormat } from '../../store/model.js';
import { type DkimKey, headerFields, signMessage } from './dkim.js';

export interface SignJob {
  id: number;
  request: Uint8Array;
  format: RequestFormat;
  messageId: string;
  createdAt: number;
  raw: Uint8Array | null;
  key: DkimKey;
  /** One recipient's own header fields, signed before the message's (SignInput.fields). */
  fields: string | null;
}
/**
 * `signed` is the signature header followed by the message; `rawAt`, when the message was composed
 * now, is where the message starts in it (the composed message is that tail). `permanent`: the
 * message can never be sent as it stands (UnsendableMessage), so it is not retried.
 */
export type SignReply =
  | { id: number; ok: true; signed: Uint8Array; rawAt: number | null }
  | { id: number; ok: false; error: string; permanent: boolean };

async function handle(job: SignJob): Promise<void> {
  try {
    // A submitted message (mime) is the stored request itself, signed as the client wrote it; a
    // send request is composed at its first attempt, and the composed copy comes back to be kept.
    const given = job.raw ?? (job.format === 'mime' ? job.request : null);
    const raw = given
      ? Buffer.from(given.buffer, given.byteOffset, given.byteLength)
      : await composeMessage(readStoredRequest(job.request), job.messageId, job.createdAt);
    // The signed message has memory of its own (signMessage), so it is moved to the event loop's
    // thread, not cloned: a small Buffer is a view into an 8 KiB pool slab, and cloning copies the slab.
    // A message that has its own List-Unsubscribe keeps it: the fields are never there twice.
    const own = job.fields !== null && headerFields(raw).fields.some((f) => f.name === 'list-unsubscribe');
    const signed = signMessage(
      job.fields === null || own ? raw : Buffer.concat([Buffer.from(job.fields, 'latin1'), raw]),
      job.key,
    );
    parentPort!.postMessage(
      { id: job.id, ok: true, signed, rawAt: given ? null : signed.byteLength - raw.byteLength } satisfies SignReply,
      [signed.buffer as ArrayBuffer],
    );
    reclaimAfter(signed.byteLength);
  } catch (e) {
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      error: (e as Error).message,
      permanent: e instanceof UnsendableMessage,
    } satisfies SignReply);
  }
}

// One job at a time: composing and signing are CPU work, so taking the next before this one is
// done would finish nothing sooner, and every job half done would be held across collections
// (with twenty interleaved, the thread's old generation grew to 33 MB of them).
let last = Promise.resolve();
parentPort!.on('message', (job: SignJob) => {
  last = last.then(() => handle(job));
});
