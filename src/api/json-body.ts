import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { LARGE_MESSAGE_BYTES } from '../lib/memory-budget.js';
import { invalidUtf8Offset } from '../lib/utf8.js';
import { describeJsonSyntaxError, findJsonSyntaxError } from './json-syntax.js';
import { BATCH_ROUTE } from './routes/emails.js';

/**
 * Reads a request body into one Buffer, at most `limit` bytes. When the body is large and its
 * length is announced, each chunk is copied into a buffer of that length as it arrives and let
 * go: a 30 MiB body is held once while it is read, not as a list of chunks and their
 * concatenation (fastify's own reader). Callback style: every request of the send path runs it.
 */
export function readBody(
  payload: Readable,
  contentLength: string | undefined,
  limit: number,
  done: (e: Error | null, body?: Buffer) => void,
): void {
  const announced = contentLength === undefined ? NaN : Number(contentLength);
  if (announced > limit) {
    done(tooLarge());
    return;
  }
  const whole = announced >= LARGE_MESSAGE_BYTES ? Buffer.allocUnsafeSlow(announced) : undefined;
  const chunks: Buffer[] = [];
  let received = 0;
  const finish = (e: Error | null, body?: Buffer) => {
    payload.off('data', onData);
    payload.off('end', onEnd);
    payload.off('error', onError);
    done(e, body);
  };
  const onData = (chunk: Buffer) => {
    if (received + chunk.length > limit || (whole && received + chunk.length > whole.length)) {
      return finish(received + chunk.length > limit ? tooLarge() : wrongLength());
    }
    if (whole) chunk.copy(whole, received);
    else chunks.push(chunk);
    received += chunk.length;
  };
  const onEnd = () => {
    if (!Number.isNaN(announced) && received !== announced) return finish(wrongLength());
    finish(null, whole ?? Buffer.concat(chunks, received));
  };
  // An aborted request fails the read with ECONNRESET ("aborted"): marked as the client's, so the
  // error handler counts it, and an error of the same code from elsewhere (the store) is not taken for it.
  const onError = (e: Error) => finish(new RequestAborted(e));
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
  payload.resume();
}

/**
 * The request body's stream failed while it was read: the client went away (Node's IncomingMessage
 * fails the read with ECONNRESET "aborted"). Told apart from other errors by its class, never by
 * its code: a store that cannot be reached fails with the same code (api/errors.ts).
 */
export class RequestAborted extends Error {
  constructor(readonly reason: Error) {
    super(`request body read failed: ${reason.message}`);
    this.name = 'RequestAborted';
  }
}

const tooLarge = () => new ApiError('payload_too_large', 'The request body is larger than the limit.');
const wrongLength = () =>
  new ApiError('invalid_json', 'The request body is not as long as its Content-Length header says.');

/**
 * The body as a JSON object, or the reason it is not one. JSON is UTF-8 (RFC 8259 8.1): a bad
 * byte is refused, never replaced with U+FFFD, which would change the customer's text without a
 * word. Leaves on the request what the send path stores (request-fields.ts: rawText or rawBody) and, for
 * an Idempotency-Key, the body's hash.
 */
export function parseJsonBody(request: FastifyRequest, raw: Buffer): Record<string, unknown> | unknown[] | ApiError {
  const bad = invalidUtf8Offset(raw);
  if (bad !== -1)
    return new ApiError(
      'invalid_json',
      `The request body is not UTF-8 (RFC 8259): a malformed sequence starts at byte offset ${bad} (0x${raw[bad]!.toString(16).padStart(2, '0')}).`,
    );
  let value: unknown;
  const text = raw.toString('utf8');
  try {
    value = JSON.parse(text);
  } catch {
    return syntaxError(text);
  }
  // An array only where one is asked for (a batch); everywhere else an object.
  const wantsArray = request.routeOptions.url === BATCH_ROUTE;
  if (value === null || typeof value !== 'object' || Array.isArray(value) !== wantsArray)
    return new ApiError(
      'invalid_json',
      wantsArray ? 'The request body must be a JSON array of messages.' : 'The request body must be a JSON object.',
    );
  if (request.headers['idempotency-key'] !== undefined) request.bodyHash = hashBody(raw);
  if (raw.length >= LARGE_MESSAGE_BYTES) request.rawBody = raw;
  else request.rawText = text;
  return value as Record<string, unknown> | unknown[];
}

/** Where the body stops being JSON, in the message and under `body` in details (json-syntax.ts). */
function syntaxError(text: string): ApiError {
  const found = findJsonSyntaxError(text);
  // Valid by the scanner yet refused by JSON.parse (nesting past V8's limits): no position to give.
  if (!found) return new ApiError('invalid_json', 'The request body is not valid JSON.');
  const where = describeJsonSyntaxError(found);
  return new ApiError('invalid_json', `The request body is not valid JSON: ${where}.`, { body: [where] });
}

/** Body hash for Idempotency-Key comparisons. */
export function hashBody(raw: Buffer): Buffer {
  return createHash('sha256').update(raw).digest();
}
