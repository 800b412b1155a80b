import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Metrics } from '../lib/metrics.js';
import { isStoreUnavailable } from '../store/errors.js';
import { RequestAborted } from './json-body.js';
import type { SendGate } from './send-gate.js';

/** Fastify's own errors, mapped once to the error table (docs/api.md, Errors). */
function fromFastify(e: FastifyError): ApiError | undefined {
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is larger than the limit.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'Send the request body as application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_json', 'The request body is not as long as its Content-Length header says.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_json', 'The request body is not valid JSON.');
  }
  if (e.statusCode === 413) return new ApiError('payload_too_large', 'The request body is larger than the limit.');
  if (e.statusCode === 415) return new ApiError('unsupported_media_type', 'Send the request body as application/json.');
  return undefined;
}

/**
 * The answer an error thrown anywhere in a request (hook, parser, route) maps to, or undefined
 * (an internal error). Decided by what the error is, in this order: our own ApiError; the store
 * unavailable (503, whatever the engine's error looks like, so a server-side failure never reads
 * as the client's); fastify's own errors, by their FST_ code only.
 */
export function apiErrorOf(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (isStoreUnavailable(error)) return storeUnavailable();
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && code.startsWith('FST_')) return fromFastify(error as FastifyError);
  return undefined;
}

const storeUnavailable = () =>
  new ApiError(
    'store_unavailable',
    'The store cannot be reached or cannot write right now; the request was not accepted. Retry later.',
  );

export function installErrorHandlers(app: FastifyInstance, log: Logger, gate: SendGate, metrics?: Metrics): void {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    // The client went away while its body was read (json-body.ts): nobody is left to answer, and
    // any client can do it, so it is counted and logged at debug, never at error.
    if (error instanceof RequestAborted) {
      metrics?.apiAborted.inc();
      log.debug({ url: request.url, method: request.method }, 'client aborted its request');
      return reply.code(400).send(new ApiError('invalid_json', 'The request body was cut short.').toBody());
    }
    // A key taken from the cache unchecked may have been revoked since: that answer comes first.
    let api = await gate.refusalFirst(request, apiErrorOf(error));
    if (api?.code === 'store_unavailable')
      log.error(
        { err: { code: (error as { code?: string }).code, message: error.message } },
        'store unavailable: request refused with 503',
      );
    if (!api) {
      log.error({ err: error, url: request.url, method: request.method }, 'unhandled API error');
      api = new ApiError('internal_error', 'Internal error.');
    }
    if (api.status === 503) reply.header('retry-after', '30');
    else if (api.retryAfter !== undefined) reply.header('retry-after', String(api.retryAfter));
    return reply.code(api.status).send(api.toBody());
  });
  app.setNotFoundHandler((_request, reply) => {
    const e = new ApiError('not_found', 'No such resource.');
    return reply.code(e.status).send(e.toBody());
  });
}
