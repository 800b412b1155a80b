import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Dashboard, DashboardDeps } from './dashboard.js';

// What every request to the dashboard passes through before its route: the security headers and
// the session of its cookie, then, for a POST, the same-origin and CSRF checks.

/**
 * The pages' Content-Security-Policy: nothing from anywhere but this origin, no inline script or
 * style, no plugins, no framing of the dashboard, forms only to itself.
 */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

/** Adds both to the dashboard's app: the headers and session on every request, the checks on every POST. */
export function requestHooks(dash: Dashboard, deps: DashboardDeps): void {
  const { store, clock } = deps;
  dash.app.addHook('onRequest', (request, reply, done) => {
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
  dash.app.addHook('preHandler', sameOriginWithToken);
}

// State-changing requests: same-origin only (Sec-Fetch-Site / Origin, where the browser sends
// them) and the session's CSRF token in the form. The cookie is SameSite=Strict as well.
function sameOriginWithToken(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
  if (request.method !== 'POST') return done();
  const site = request.headers['sec-fetch-site'];
  const origin = request.headers.origin;
  const crossSite =
    (site !== undefined && site !== 'same-origin' && site !== 'none') ||
    (origin !== undefined && origin !== 'null' && new URL(origin).host !== request.headers.host);
  if (crossSite) return void reply.code(403).type('text/plain; charset=utf-8').send('Cross-site request refused.');
  request.form = (request.body ?? {}) as Record<string, string>;
  if (request.routeOptions.url === '/login') return done();
  const token = request.form._csrf ?? '';
  const expected = request.session?.csrf ?? '';
  const ok =
    token.length === expected.length &&
    expected.length > 0 &&
    timingSafeEqual(Buffer.from(token), Buffer.from(expected));
  if (!ok)
    return void reply
      .code(403)
      .type('text/plain; charset=utf-8')
      .send('The form has expired or did not come from this dashboard; reload the page and try again.');
  done();
}
