import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import { readFileSync } from 'node:fs';
import { timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../config/load.js';
import { Html } from './html.js';
import { LoginThrottle } from './throttle.js';
import { pageRoutes } from './routes/index.js';
import { sendPage, type Dashboard, type DashboardDeps } from './dashboard.js';

/**
 * The pages' Content-Security-Policy: nothing from anywhere but this origin, no inline script or
 * style, no plugins, no framing of the dashboard, forms only to itself.
 */
export const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The cookie a session travels in: __Host- prefixed (Secure, host-only, path /) when served over https. */
export function cookieName(secure: boolean): string {
  return secure ? '__Host-posthaste-session' : 'posthaste-session';
}

function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

const FORM_LIMIT = 64 * 1024;

/** A flat form: repeated fields keep their last value, except names ending in [] which are joined by newlines. */
function parseForm(body: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of new URLSearchParams(body)) out[k] = k.endsWith('[]') && out[k] !== undefined ? `${out[k]}\n${v}` : v;
  return out;
}

export function buildDashboard(deps: DashboardDeps): FastifyInstance {
  const { config, store, clock } = deps;
  let secure = false;
  if (config.dashboard.public_url) {
    let u: URL;
    try {
      u = new URL(config.dashboard.public_url);
    } catch {
      throw new ConfigError('dashboard.public_url', `"${config.dashboard.public_url}" is not a URL`);
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ConfigError('dashboard.public_url', 'must be an http or https URL');
    secure = u.protocol === 'https:';
  }
  const app = Fastify({
    loggerInstance: deps.log,
    childLoggerFactory: (logger) => logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: FORM_LIMIT,
    // Behind a TLS-terminating proxy the client's address comes in X-Forwarded-For from loopback.
    trustProxy: '127.0.0.1,::1',
  }) as unknown as FastifyInstance;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => done(null, parseForm(body as string)));

  const dash: Dashboard = { app, secure, cookie: cookieName(secure), idleMs: config.dashboard.session_idle, throttle: new LoginThrottle(store.users.loginFailures) };
  const staticDir = new URL('../../../src/dashboard/static/', import.meta.url);
  const assets = new Map(
    [
      ['app.css', 'text/css; charset=utf-8'],
      ['app.js', 'text/javascript; charset=utf-8'],
    ].map(([name, type]) => [name!, { type: type!, body: readFileSync(new URL(name!, staticDir)) }]),
  );

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('content-security-policy', CSP);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'same-origin');
    reply.header('x-frame-options', 'DENY');
    reply.header('cache-control', 'no-store');
    const sid = parseCookies(request.headers.cookie).get(dash.cookie);
    if (!sid || !/^[A-Za-z0-9_-]{43}$/.test(sid)) return done();
    store.users.useSession(sid, clock.now(), dash.idleMs).then((s) => {
      if (s) request.session = { ...s, id: sid };
      done();
    }, done);
  });

  // State-changing requests: same-origin only (Sec-Fetch-Site / Origin, where the browser sends
  // them) and the session's CSRF token in the form. The cookie is SameSite=Strict as well.
  app.addHook('preHandler', (request, reply, done) => {
    if (request.method !== 'POST') return done();
    const site = request.headers['sec-fetch-site'];
    const origin = request.headers.origin;
    const crossSite = (site !== undefined && site !== 'same-origin' && site !== 'none') || (origin !== undefined && origin !== 'null' && new URL(origin).host !== request.headers.host);
    if (crossSite) return void reply.code(403).type('text/plain; charset=utf-8').send('Cross-site request refused.');
    request.form = (request.body ?? {}) as Record<string, string>;
    if (request.routeOptions.url === '/login') return done();
    const token = request.form._csrf ?? '';
    const expected = request.session?.csrf ?? '';
    const ok = token.length === expected.length && expected.length > 0 && timingSafeEqual(Buffer.from(token), Buffer.from(expected));
    if (!ok) return void reply.code(403).type('text/plain; charset=utf-8').send('The form has expired or did not come from this dashboard; reload the page and try again.');
    done();
  });

  app.get<{ Params: { name: string } }>('/static/:name', async (request, reply) => {
    const a = assets.get(request.params.name);
    if (!a) return reply.code(404).type('text/plain').send('Not found');
    return reply.header('cache-control', 'public, max-age=300').type(a.type).send(a.body);
  });

  pageRoutes(dash, deps);

  app.setNotFoundHandler((request, reply) => sendPage(reply.code(404), notFoundPage(request)));
  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    if (err.statusCode && err.statusCode < 500)
      return sendPage(reply.code(err.statusCode), new Html(`<!doctype html><title>Error</title><p>${err.statusCode === 413 ? 'The form is too large.' : 'The request could not be read.'}</p>`));
    request.log.error({ err }, 'dashboard error');
    return sendPage(reply.code(500), new Html('<!doctype html><title>Error</title><p>Something went wrong; the error is in the server log.</p>'));
  });
  return app;
}

function notFoundPage(_request: FastifyRequest): Html {
  return new Html(
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found · posthaste</title><link rel="stylesheet" href="/static/app.css"></head><body><main><h1>Not found</h1><p>There is nothing here, or it is not yours to see. <a href="/">Back to the overview</a></p></main></body></html>',
  );
}
