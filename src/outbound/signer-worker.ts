// A signing thread: composes (when not yet composed) and DKIM-signs messages off the event loop.
import { parentPort } from 'node:worker_threads';
import { composeMessage } from './compose.js';
import { signMessage, type DkimKey } from './dkim.js';
import { readStoredRequest } from '../domain/stored-request.js';
import { UnsendableMessage } from '../domain/errors.js';

export interface SignJob {
  id: number;
  request: Uint8Array;
  messageId: string;
  createdAt: number;
  raw: Uint8Array | null;
  key: DkimKey;
}
/** `permanent`: the message can never be sent as it stands (UnsendableMessage), so it is not retried. */
export type SignReply = { id: number; ok: true; raw: Uint8Array | null; signed: Uint8Array } | { id: number; ok: false; error: string; permanent: boolean };

parentPort!.on('message', (job: SignJob) => {
  void (async () => {
    try {
      const composed = job.raw ? null : await composeMessage(readStoredRequest(job.request), job.messageId, job.createdAt);
      const signed = await signMessage(Buffer.from(job.raw ?? composed!), job.key);
      parentPort!.postMessage({ id: job.id, ok: true, raw: composed, signed } satisfies SignReply);
    } catch (e) {
      parentPort!.postMessage({ id: job.id, ok: false, error: (e as Error).message, permanent: e instanceof UnsendableMessage } satisfies SignReply);
    }
  })();
});
