import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Metrics } from '../lib/metrics.js';
import { isStoreUnavailable } from '../store/errors.js';
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
 * The client went away while its request body was being read (Node's IncomingMessage fails the
 * read with ECONNRESET "aborted"). Nobody is left to answer, and it is the client's doing: any
 * client can do it, so it is counted and logged at debug, never at error.
 */
function clientAborted(error: FastifyError, request: FastifyRequest): boolean {
  return (
    (error as { code?: string }).code === 'ECONNRESET' &&
    (request.raw.destroyed || request.raw.socket?.destroyed === true)
  );
}

export function installErrorHandlers(app: FastifyInstance, log: Logger, gate: SendGate, metrics?: Metrics): void {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (clientAborted(error, request)) {
      metrics?.apiAborted.inc();
      log.debug({ url: request.url, method: request.method }, 'client aborted its request');
      return reply.code(400).send(new ApiError('invalid_json', 'The request body was cut short.').toBody());
    }
    // A key taken from the cache unchecked may have been revoked since: that answer comes first.
    let api = await gate.refusalFirst(request, error instanceof ApiError ? error : fromFastify(error));
    if (!api && isStoreUnavailable(error)) {
      log.error(
        { err: { code: (error as { code?: string }).code, message: error.message } },
        'store unavailable: request refused with 503',
      );
      api = new ApiError(
        'store_unavailable',
        'The store cannot be reached or cannot write right now; the request was not accepted. Retry later.',
      );
    }
    if (!api) {
      log.error({ err: error, url: request.url, method: request.method }, 'unhandled API error');
      api = new ApiError('internal_error', 'Internal error.');
    }
    if (api.status === 503) reply.header('retry-after', '30');
    return reply.code(api.status).send(api.toBody());
  });
  app.setNotFoundHandler((_request, reply) => {
    const e = new ApiError('not_found', 'No such resource.');
    return reply.code(e.status).send(e.toBody());
  });
}
