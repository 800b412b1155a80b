import type { FastifyInstance } from 'fastify';
import { ApiError, Problems, validationError } from '../../domain/errors.js';
import { escalation, type GrantRequest, type KeyGrant, parseGrant } from '../../domain/key-scopes.js';
import type { ApiKeyInfo, KeyKind } from '../../store/model.js';
import { needs, requireKey } from '../authorization.js';
import type { ApiDeps } from '../deps.js';

/**
 * The customer's API keys (docs/api.md, "Keys and scopes"): listed with their scopes,
 * restrictions and last use, never the secret; created with the secret shown once, never with a
 * scope or a restriction wider than the creating key's own; revoked, but never the key asking.
 */
export function keyRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { store, clock, log } = deps;

  app.get('/api/v1/keys', needs('keys:write'), async (request) => ({
    data: (await store.keys.list(requireKey(request).customer_id)).map(keyView),
  }));

  app.post('/api/v1/keys', needs('keys:write'), async (request, reply) => {
    const creator = requireKey(request);
    const { name, kind, grant } = keyRequest(request.body, creator);
    const k = await store.keys.create({ customerId: creator.customer_id, kind, name, grant, now: clock.now() });
    log.info({ key: k.id, by: creator.id, scopes: k.scopes }, 'API key created through the API');
    return reply.code(201).send({ ...keyView(k), key: k.key });
  });

  app.delete<{ Params: { id: string } }>('/api/v1/keys/:id', needs('keys:write'), async (request) => {
    const asking = requireKey(request);
    const k = await store.keys.get(request.params.id, asking.customer_id);
    if (!k) throw new ApiError('not_found', 'No such API key.');
    if (k.id === asking.id)
      throw new ApiError(
        'conflict',
        'A key cannot revoke itself: revoke it with another key, in the dashboard or with "posthaste keys revoke".',
      );
    await store.keys.revoke(k.id, clock.now());
    log.info({ key: k.id, by: asking.id }, 'API key revoked through the API');
    return keyView((await store.keys.get(k.id, asking.customer_id))!);
  });
}

const iso = (ms: number | null | undefined): string | null => (ms == null ? null : new Date(ms).toISOString());

/** A key as the API shows it: never its secret (the store never has it) nor its hash. */
export function keyView(k: ApiKeyInfo): Record<string, unknown> {
  return {
    id: k.id,
    name: k.name,
    kind: k.kind,
    scopes: k.scopes,
    from_domains: k.from_domains,
    allowed_cidrs: k.allowed_cidrs,
    created_at: iso(k.created_at),
    last_used_at: iso(k.last_used_at),
    revoked_at: iso(k.revoked_at),
  };
}

const FIELDS = new Set(['name', 'kind', 'scopes', 'from_domains', 'allowed_cidrs']);

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** The body of POST /api/v1/keys read: every problem at once, an escalation among them. */
function keyRequest(body: unknown, creator: ApiKeyInfo): { name: string; kind: KeyKind; grant: KeyGrant } {
  const p = new Problems();
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new ApiError('validation_failed', 'A key request must be a JSON object.', {
      body: ['must be a JSON object'],
    });
  const b = body as Record<string, unknown>;
  for (const f of Object.keys(b)) if (!FIELDS.has(f)) p.add(f, 'is not a field of a key');
  const name = b.name ?? '';
  if (typeof name !== 'string' || name.length > 100) p.add('name', 'must be a string of at most 100 characters');
  const kind = b.kind ?? creator.kind;
  if (kind !== 'production' && kind !== 'sandbox') p.add('kind', 'must be production or sandbox');
  else if (kind === 'production' && creator.kind === 'sandbox')
    p.add('kind', 'a sandbox key cannot create a production key');
  if (!strings(b.scopes)) p.add('scopes', 'is required: a list of scopes, or ["full"] or ["send"]');
  for (const f of ['from_domains', 'allowed_cidrs'] as const)
    if (b[f] !== undefined && b[f] !== null && !strings(b[f])) p.add(f, 'must be a list of strings, or null');
  if (!p.empty) throw validationError(p);
  const grant = grantOf(b as unknown as GrantRequest, creator, p);
  if (!p.empty) throw validationError(p);
  return { name: name as string, kind: kind as KeyKind, grant: grant! };
}

/**
 * The grant asked for (domain/key-scopes.ts), a restriction the creator has inherited when the
 * request leaves it out; an escalation is a problem of the request.
 */
function grantOf(req: GrantRequest, creator: ApiKeyInfo, p: Problems): KeyGrant | undefined {
  const parsed = parseGrant({
    scopes: req.scopes,
    from_domains: req.from_domains === undefined ? creator.from_domains : req.from_domains,
    allowed_cidrs: req.allowed_cidrs === undefined ? creator.allowed_cidrs : req.allowed_cidrs,
  });
  if ('problems' in parsed) {
    for (const [f, problem] of Object.entries(parsed.problems)) p.add(f, problem);
    return undefined;
  }
  for (const [f, problem] of Object.entries(escalation(creator, parsed.grant))) p.add(f, problem);
  return parsed.grant;
}
