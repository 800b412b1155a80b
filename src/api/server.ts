import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import type { ApiDeps } from './deps.js';
import { ApiError } from '../domain/errors.js';
import { authenticateRequest } from './auth.js';
import { reclaimAfter } from '../lib/reclaim.js';
import { installErrorHandlers } from './errors.js';
import { emailRoutes, hashBody, SEND_ROUTE } from './routes/emails.js';
import { healthRoutes } from './routes/health.js';
import { webhookRoutes } from './routes/webhooks.js';
import { suppressionRoutes } from './routes/suppressions.js';
import { inboundRoutes } from './routes/inbound.js';

/** Request bodies carry attachments in Base64 (4/3 of the bytes) plus JSON: allow that much. */
export function requestBodyLimit(maxMessageBytes: number): number {
  return Math.ceil((maxMessageBytes * 4) / 3) + 256 * 1024;
}

export function buildApi(deps: ApiDeps): FastifyInstance {
  const { config } = deps;
  const https =
    config.api['tls.cert'] && config.api['tls.key']
      ? { https: { cert: readFileSync(config.api['tls.cert']), key: readFileSync(config.api['tls.key']) } }
      : {};
  const app = Fastify({
    ...https,
    loggerInstance: deps.log,
    // No child logger per request (measured: 1 % of the event loop on the accept path); the API's
    // own log lines carry what they need.
    childLoggerFactory: (logger) => logger,
    // One log line per request would dominate the accept path; errors are logged on their own.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: requestBodyLimit(config.limits.max_message_bytes),
    return503OnClosing: true,
  }) as unknown as FastifyInstance; // the https variant types differ only in the server type

  // JSON only: every other media type is a 415 (fastify answers that once no parser matches).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, raw: Buffer, done) => {
    let value: unknown;
    const text = raw.toString('utf8');
    try {
      value = JSON.parse(text);
    } catch {
      return done(new ApiError('invalid_json', 'The request body is not valid JSON.'), undefined);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      return done(new ApiError('invalid_json', 'The request body must be a JSON object.'), undefined);
    if (request.headers['idempotency-key'] !== undefined) request.bodyHash = hashBody(raw);
    request.rawText = text;
    done(null, value);
  });

  // Refusals that come before the body is read: shutting down, then the key. (Callback-style
  // hooks: every request runs them, and an async hook costs a promise each.)
  app.addHook('onRequest', (request, _reply, done) => {
    if (deps.lifecycle.shuttingDown) return done(new ApiError('unavailable', 'The server is shutting down; the request was not accepted.'));
    if (request.url.startsWith('/api/')) {
      // The send path defers the freshness check to its transaction (AuthCache); errors before
      // that re-check the key, so a revoked key still gets 401 first (errors.ts).
      const sendPath = request.method === 'POST' && request.routeOptions.url === SEND_ROUTE;
      try {
        request.apiKey = authenticateRequest(deps.auth, request, !sendPath);
      } catch (e) {
        return done(e as Error);
      }
      request.keyUnchecked = sendPath;
    }
    done();
  });
  // After every response: the API counter (Prometheus), and for a large request body, whose
  // garbage (the body, its JSON, decoded attachments) is worth collecting soon (lib/reclaim.ts).
  // One hook for both: it runs on every request of the accept path.
  const metrics = deps.metrics;
  app.addHook('onResponse', (request, reply, done) => {
    metrics?.countApi(reply.statusCode);
    const length = request.headers['content-length'];
    // Fewer than 6 digits is under 100,000 bytes, far below reclaim's threshold: no Number() needed.
    if (length !== undefined && length.length >= 6) reclaimAfter(Number(length));
    done();
  });
  if (metrics && deps.config.metrics.enabled)
    app.get('/metrics', async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  installErrorHandlers(app, deps.log, deps.auth);
  healthRoutes(app, deps);
  emailRoutes(app, deps);
  webhookRoutes(app, deps);
  suppressionRoutes(app, deps);
  inboundRoutes(app, deps);
  return app;
}
