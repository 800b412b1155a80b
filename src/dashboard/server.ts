import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { type Dashboard, type DashboardDeps, sendPage } from './dashboard.js';
import { requestHooks } from './hooks.js';
import { Html } from './html.js';
import { pageRoutes } from './routes/index.js';
import { LoginThrottle } from './throttle.js';

/** The cookie a session travels in: __Host- prefixed (Secure, host-only, path /) when served over https. */
export function cookieName(secure: boolean): string {
  return secure ? '__Host-posthaste-session' : 'posthaste-session';
}

const FORM_LIMIT = 64 * 1024;

/** A flat form: repeated fields keep their last value, except names ending in [] which are joined by newlines. */
function parseForm(body: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of new URLSearchParams(body))
    out[k] = k.endsWith('[]') && out[k] !== undefined ? `${out[k]}\n${v}` : v;
  return out;
}

/** Whether the dashboard is served over https, by its configured public URL (none: plain http). */
function servedOverHttps(config: Config): boolean {
  if (!config.dashboard.public_url) return false;
  let u: URL;
  try {
    u = new URL(config.dashboard.public_url);
  } catch {
    throw new ConfigError('dashboard.public_url', `"${config.dashboard.public_url}" is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new ConfigError('dashboard.public_url', 'must be an http or https URL');
  return u.protocol === 'https:';
}

export function buildDashboard(deps: DashboardDeps): FastifyInstance {
  const { config, store } = deps;
  const secure = servedOverHttps(config);
  const app = Fastify({
    loggerInstance: deps.log,
    childLoggerFactory: (logger) => logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: FORM_LIMIT,
    // Behind a TLS-terminating proxy the client's address comes in X-Forwarded-For from loopback.
    trustProxy: '127.0.0.1,::1',
  }) as unknown as FastifyInstance;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
    done(null, parseForm(body as string)),
  );

  const dash: Dashboard = {
    app,
    secure,
    cookie: cookieName(secure),
    idleMs: config.dashboard.session_idle,
    throttle: new LoginThrottle(store.users.loginFailures),
  };
  requestHooks(dash, deps);
  staticRoutes(app);
  pageRoutes(dash, deps);
  errorPages(app);
  return app;
}

/** The stylesheet, script and icon of the pages, read once from src/dashboard/static/. */
function staticRoutes(app: FastifyInstance): void {
  const staticDir = new URL('../../../src/dashboard/static/', import.meta.url);
  const assets = new Map(
    [
      ['app.css', 'text/css; charset=utf-8'],
      ['app.js', 'text/javascript; charset=utf-8'],
      ['favicon.svg', 'image/svg+xml'],
    ].map(([name, type]) => [name!, { type: type!, body: readFileSync(new URL(name!, staticDir)) }]),
  );
  const send = (reply: FastifyReply, name: string) => {
    const a = assets.get(name);
    if (!a) return reply.code(404).type('text/plain').send('Not found');
    return reply.header('cache-control', 'public, max-age=300').type(a.type).send(a.body);
  };
  app.get<{ Params: { name: string } }>('/static/:name', async (request, reply) => send(reply, request.params.name));
  // Where a browser looks for the icon of a page that names none (the not-found and error pages).
  app.get('/favicon.ico', async (_request, reply) => send(reply, 'favicon.svg'));
}

const NOT_FOUND_PAGE = new Html(
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found · posthaste</title><link rel="icon" href="/static/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/static/app.css"></head><body><main><h1>Not found</h1><p>There is nothing here, or it is not yours to see. <a href="/">Back to the overview</a></p></main></body></html>',
);

/** The not-found page, and the pages of a request that could not be read or failed. */
function errorPages(app: FastifyInstance): void {
  app.setNotFoundHandler((_request, reply) => sendPage(reply.code(404), NOT_FOUND_PAGE));
  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    if (err.statusCode && err.statusCode < 500)
      return sendPage(
        reply.code(err.statusCode),
        new Html(
          `<!doctype html><title>Error</title><p>${err.statusCode === 413 ? 'The form is too large.' : 'The request could not be read.'}</p>`,
        ),
      );
    request.log.error({ err }, 'dashboard error');
    return sendPage(
      reply.code(500),
      new Html('<!doctype html><title>Error</title><p>Something went wrong; the error is in the server log.</p>'),
    );
  });
}
