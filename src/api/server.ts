import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Config } from '../config/schema.js';
import { ApiError } from '../domain/errors.js';
import { parseCidrs } from '../domain/key-scopes.js';
import type { Logger } from '../lib/logger.js';
import type { Metrics } from '../lib/metrics.js';
import { checkScope, isPublic, requireDeclaredAccess } from './authorization.js';
import type { ApiDeps } from './deps.js';
import { SendGate } from './send-gate.js';
import './request-fields.js';
import { LARGE_MESSAGE_BYTES } from '../lib/memory-budget.js';
import { installErrorHandlers } from './errors.js';
import { parseJsonBody, readBody } from './json-body.js';
import { holdMemory } from './memory.js';
import { domainRoutes } from './routes/domains.js';
import { emailRoutes } from './routes/emails.js';
import { healthRoutes } from './routes/health.js';
import { inboundRoutes } from './routes/inbound.js';
import { keyRoutes } from './routes/keys.js';
import { openApiRoutes } from './routes/openapi.js';
import { queueRoutes } from './routes/queue.js';
import { suppressionRoutes } from './routes/suppressions.js';
import { webhookRoutes } from './routes/webhooks.js';

/** Request bodies carry attachments in Base64 (4/3 of the bytes) plus JSON: allow that much. */
export function requestBodyLimit(maxMessageBytes: number): number {
  return Math.ceil((maxMessageBytes * 4) / 3) + 256 * 1024;
}

/**
 * A large request body is read only once it has room in the shared memory budget (until then
 * the client is held back by TCP, its body unread). Small bodies, nearly every send, pass
 * without a look.
 */
function holdLargeBody(deps: ApiDeps, request: FastifyRequest, reply: FastifyReply, done: (e?: Error) => void): void {
  const length = request.headers['content-length'];
  let bytes: number;
  if (length !== undefined) {
    // Fewer than 5 digits is under 64 KiB: no Number() on the hot path.
    if (length.length < 5 || (bytes = Number(length)) < LARGE_MESSAGE_BYTES) {
      done();
      return;
    }
  } else if (request.headers['transfer-encoding'] !== undefined)
    bytes = requestBodyLimit(deps.config.limits.max_message_bytes);
  else {
    done();
    return;
  }
  holdMemory(deps.budget, reply, bytes).then(() => done(), done);
}

export function buildApi(deps: ApiDeps): FastifyInstance {
  const app = createServer(deps.config, deps.log);
  installJsonParser(app, requestBodyLimit(deps.config.limits.max_message_bytes));
  const gate = new SendGate(deps.auth, deps.store);
  requireDeclaredAccess(app);
  installRequestChecks(app, deps, gate);
  if (deps.metrics) installApiMetrics(app, deps.metrics);
  installErrorHandlers(app, deps.log, gate, deps.metrics);
  healthRoutes(app, deps);
  emailRoutes(app, deps, gate);
  queueRoutes(app, deps);
  webhookRoutes(app, deps);
  suppressionRoutes(app, deps);
  inboundRoutes(app, deps);
  domainRoutes(app, deps);
  keyRoutes(app, deps);
  // /metrics here only when it has no listener of its own (metrics.listen empty).
  const metrics = deps.metrics;
  if (metrics && deps.config.metrics.enabled && !deps.config.metrics.listen)
    app.get('/metrics', async (_request, reply) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
    );
  openApiRoutes(app);
  return app;
}

/**
 * The fastify server, on TLS when api.tls.cert and api.tls.key are set. Behind a reverse proxy of
 * api.trusted_proxies, `request.ip` is the address that proxy forwarded (X-Forwarded-For, read
 * from the right past the trusted hops); from any other peer the header is ignored and
 * `request.ip` is the peer (a key's allowed_cidrs: authorization.ts).
 */
function createServer(config: Config, log: Logger): FastifyInstance {
  const proxies = parseCidrs(config.api.trusted_proxies);
  if (typeof proxies === 'string') throw new Error(`api.trusted_proxies: ${proxies}`);
  const https =
    config.api['tls.cert'] && config.api['tls.key']
      ? { https: { cert: readFileSync(config.api['tls.cert']), key: readFileSync(config.api['tls.key']) } }
      : {};
  return Fastify({
    ...https,
    loggerInstance: log,
    // No child logger per request (measured: 1 % of the event loop on the accept path); the API's
    // own log lines carry what they need.
    childLoggerFactory: (logger) => logger,
    // One log line per request would dominate the accept path; errors are logged on their own.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: requestBodyLimit(config.limits.max_message_bytes),
    return503OnClosing: true,
    ...(proxies.length > 0 ? { trustProxy: proxies } : {}),
  }) as unknown as FastifyInstance; // the https variant types differ only in the server type
}

/** JSON only: every other media type is a 415 (fastify answers that once no parser matches). The parser reads bodies itself (json-body.ts), to the same limit. */
function installJsonParser(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', (request, payload, done) =>
    readBody(payload, request.headers['content-length'], bodyLimit, (e, raw) => {
      if (e) return done(e, undefined);
      const value = parseJsonBody(request, raw!);
      if (value instanceof ApiError) done(value, undefined);
      else done(null, value);
    }),
  );
}

/**
 * Refusals that come before the body is read: shutting down, the key, no such route; then a
 * large body waits for room in the memory budget. (Callback-style hooks: every request runs
 * them, and an async hook costs a promise each.)
 */
function installRequestChecks(app: FastifyInstance, deps: ApiDeps, gate: SendGate): void {
  const afterAuth = (request: FastifyRequest, reply: FastifyReply, done: (e?: Error) => void) => {
    // No such route: answered before a body is read, so nobody can make the server read one for nothing.
    if (request.is404) return done(new ApiError('not_found', 'No such resource.'));
    // The route's scope (authorization.ts, needs): refused before its body is read.
    const denied = checkScope(request);
    if (denied) return done(denied);
    holdLargeBody(deps, request, reply, done);
  };
  app.addHook('onRequest', (request, reply, done) => {
    if (deps.lifecycle.shuttingDown)
      return done(new ApiError('unavailable', 'The server is shutting down; the request was not accepted.'));
    // The send path defers the freshness check to its commit; errors before that re-check the
    // key, so a revoked key still gets 401 first (send-gate.ts).
    if (request.url.startsWith('/api/') && !isPublic(request)) gate.authenticate(request, reply, done, afterAuth);
    else afterAuth(request, reply, done);
  });
}

/**
 * After every response: the API's counter and latency (Prometheus), by route pattern; fastify
 * times every request already. (A large body's garbage is collected when its memory hold ends:
 * memory.ts.)
 */
function installApiMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeApi(request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
