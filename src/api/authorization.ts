import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { addressAllowed, hasScope, type Scope } from '../domain/key-scopes.js';
import type { AuthCache } from '../store/auth-cache.js';
import type { ApiKeyInfo } from '../store/model.js';
import './request-fields.js';

/** What a route of the API declares it needs: a scope of the key (docs/api.md, "Keys and scopes"), or no key at all. */
export type RouteAccess = Scope | 'public';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
}

/**
 * A route's options that require a scope, the one way an API route says what it needs:
 * `app.get('/api/v1/things', needs('things:read'), handler)`. The request is refused with
 * `403 insufficient_scope` naming it when the key lacks it (`checkScope`, from the server's
 * request hook, before the body is read).
 */
export const needs = (scope: Scope) => ({ config: { access: scope } });

/** A route under /api/ that takes no key (the OpenAPI document). */
export const PUBLIC_ROUTE = { config: { access: 'public' as RouteAccess } };

export interface DeclaredRoute {
  method: string;
  url: string;
  access: RouteAccess;
}

const declared = new WeakMap<FastifyInstance, DeclaredRoute[]>();

/**
 * Every route under /api/ declares what it needs (`needs` or PUBLIC_ROUTE): one that does not is
 * refused when it is added, so a new route cannot go out open to every key. Called before the
 * routes are added.
 */
export function requireDeclaredAccess(app: FastifyInstance): void {
  const routes: DeclaredRoute[] = [];
  declared.set(app, routes);
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/api/')) return;
    const access = route.config?.access;
    if (access === undefined) throw new Error(`API route ${route.url} declares no scope (api/authorization.ts, needs)`);
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push({ method, url: route.url, access });
  });
}

/** The API's routes under /api/ and what each needs, as the running app has them (the tests' table of routes and scopes). */
export const declaredRoutes = (app: FastifyInstance): readonly DeclaredRoute[] => declared.get(app) ?? [];

/** Whether the route takes no key. */
export const isPublic = (request: FastifyRequest): boolean => request.routeOptions.config?.access === 'public';

/** The route's scope checked against the request's key: the refusal, or undefined. */
export function checkScope(request: FastifyRequest): ApiError | undefined {
  const access = request.routeOptions.config?.access;
  const key = request.apiKey;
  if (access === undefined || access === 'public' || !key || hasScope(key, access)) return undefined;
  return new ApiError(
    'insufficient_scope',
    `This API key does not have the scope ${access}, which this request needs.`,
    {
      scope: [`${access} is needed; this key has ${key.scopes.join(', ') || 'no scope'}`],
    },
  );
}

/**
 * `Authorization: Token <key>` or `Authorization: Bearer <key>` (the scheme is case-insensitive,
 * RFC 9110 11.1; most HTTP clients send Bearer). Checked (the default), the cache is validated against the store
 * first, so a revocation is refused on the next request; unchecked is for the send path, whose
 * commit re-verifies the key (send-gate.ts). A key restricted to allowed_cidrs is refused from
 * any other client address (`request.ip`: the peer, or behind a proxy of api.trusted_proxies the
 * address it forwarded; server.ts).
 */
export async function authenticateRequest(
  auth: AuthCache,
  request: FastifyRequest,
  checked = true,
): Promise<ApiKeyInfo> {
  const header = request.headers.authorization;
  if (!header)
    throw new ApiError(
      'unauthorized',
      'Missing Authorization header; send "Authorization: Bearer <API key>" (or "Token <API key>").',
    );
  const m = /^(?:Token|Bearer)[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!m)
    throw new ApiError('unauthorized', 'The Authorization header is not "Bearer <API key>" or "Token <API key>".');
  const key = await auth.key(m[1]!, checked);
  if (!key) throw unauthorized();
  if (!addressAllowed(key.allowed_cidrs, request.ip))
    throw new ApiError('forbidden', `This API key may not be used from ${request.ip} (its allowed_cidrs).`, {
      client_address: [`${request.ip} is outside this key's allowed_cidrs`],
    });
  return key;
}

export function unauthorized(): ApiError {
  return new ApiError('unauthorized', 'The API key is malformed, unknown or revoked.');
}

export function requireKey(request: FastifyRequest): ApiKeyInfo {
  if (!request.apiKey) throw new ApiError('unauthorized', 'Missing API key.');
  return request.apiKey;
}
