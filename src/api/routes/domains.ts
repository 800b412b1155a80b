import type { FastifyInstance } from 'fastify';
import { serverIdentity } from '../../config/settings.js';
import { ApiError, Problems, validationError } from '../../domain/errors.js';
import { parseTime } from '../../domain/message-search.js';
import { addressesOfSpf, dmarcSummary } from '../../domain-setup/dmarc.js';
import { addDomainFor, domainView, ownDomain, parseDomainName, rotateDkimFor } from '../../domain-setup/manage.js';
import { verifyDomain } from '../../domain-setup/records.js';
import { createResolver } from '../../lib/dns.js';
import type { DomainRow } from '../../store/model.js';
import { needs, requireKey } from '../authorization.js';
import type { ApiDeps } from '../deps.js';

/**
 * A customer's sending and receiving domains (docs/api.md, "Domains"): the same records and checks
 * as `posthaste domains` (domain-setup/), each for the key's own customer. Another customer's
 * domain reads as none, and adding it is a conflict that does not say whose it is.
 */
export function domainRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { store, config, clock } = deps;
  const resolver = createResolver(config.dns.servers);

  app.get('/api/v1/domains', needs('domains:write'), async (request) => {
    const key = requireKey(request);
    const now = clock.now();
    return { data: (await store.domains.list(key.customer_id)).map((d) => domainView(d, config, now)) };
  });

  app.post('/api/v1/domains', needs('domains:write'), async (request, reply) => {
    const key = requireKey(request);
    const input = addInput((request.body ?? {}) as Record<string, unknown>);
    const now = clock.now();
    const added = await addDomainFor(store.domains, { customerId: key.customer_id, ...input, now });
    if (added.kind === 'taken')
      throw new ApiError(
        'conflict',
        added.own ? `${input.name} is already one of your domains.` : `${input.name} is registered already.`,
        { name: [added.own ? 'is already one of your domains' : 'is registered already'] },
      );
    return reply.code(201).send(domainView(added.domain, config, now));
  });

  app.get<{ Params: { name: string } }>('/api/v1/domains/:name', needs('domains:write'), async (request) => {
    const d = await domainOf(deps, requireKey(request).customer_id, request.params.name);
    return domainView(d, config, clock.now());
  });

  app.delete<{ Params: { name: string } }>('/api/v1/domains/:name', needs('domains:write'), async (request) => {
    const d = await domainOf(deps, requireKey(request).customer_id, request.params.name);
    await store.domains.remove(d.id);
    return { name: d.name, deleted: true };
  });

  app.post<{ Params: { name: string } }>('/api/v1/domains/:name/verify', needs('domains:write'), async (request) => {
    const d = await domainOf(deps, requireKey(request).customer_id, request.params.name);
    const now = clock.now();
    const r = await verifyDomain(store.domains, resolver, config, d, now);
    const fresh = (await store.domains.find(d.name)) ?? d;
    return {
      ...domainView(fresh, config, now),
      checks: r.checks,
      dkim_switched_to: r.switchedTo,
      dns_error: r.dnsError,
    };
  });

  app.post<{ Params: { name: string } }>(
    '/api/v1/domains/:name/rotate-dkim',
    needs('domains:write'),
    async (request) => {
      const d = await domainOf(deps, requireKey(request).customer_id, request.params.name);
      return rotateDkimFor(store.domains, d, config, clock.now());
    },
  );

  app.get<{ Params: { name: string }; Querystring: Record<string, unknown> }>(
    '/api/v1/domains/:name/dmarc',
    needs('domains:write'),
    async (request) => {
      const d = await domainOf(deps, requireKey(request).customer_id, request.params.name);
      const period = dmarcPeriod(request.query ?? {}, clock.now());
      const own = addressesOfSpf(serverIdentity(config).spfSources);
      const s = await dmarcSummary(store, own, { domain: d.name, customerId: d.customer_id, ...period });
      return { ...s, since: new Date(s.since).toISOString(), until: new Date(s.until).toISOString() };
    },
  );
}

const DMARC_DEFAULT_DAYS = 7;

/** `since` and `until` (ISO 8601; by default the last 7 days up to now), every problem at once. */
function dmarcPeriod(q: Record<string, unknown>, now: number): { since: number; until: number } {
  const p = new Problems();
  const time = (k: 'since' | 'until'): number | undefined => {
    const v = q[k];
    if (v === undefined || v === '') return undefined;
    const t = typeof v === 'string' ? parseTime(v) : undefined;
    if (t === undefined) p.add(k, 'must be a date or time in ISO 8601, e.g. 2026-11-23 or 2026-11-23T10:00:00Z');
    return t;
  };
  const until = time('until') ?? now + 1;
  const since = time('since') ?? until - DMARC_DEFAULT_DAYS * 86_400_000;
  if (p.empty && since >= until) p.add('since', 'must be before until');
  if (!p.empty) throw validationError(p);
  return { since, until };
}

/** `{name, receiving?}`: every problem at once, under its field. */
function addInput(body: Record<string, unknown>): { name: string; receiving: boolean } {
  const p = new Problems();
  for (const k of Object.keys(body)) if (!['name', 'receiving'].includes(k)) p.add(k, 'is not a known field');
  let name = '';
  if (typeof body.name !== 'string' || body.name.trim() === '') p.add('name', 'is required');
  else {
    const parsed = parseDomainName(body.name);
    if (parsed.ok) name = parsed.value;
    else p.add('name', parsed.error);
  }
  if (body.receiving !== undefined && typeof body.receiving !== 'boolean') p.add('receiving', 'must be true or false');
  if (!p.empty) throw validationError(p);
  return { name, receiving: body.receiving === true };
}

/** The customer's domain of that name, or the API's not_found (another customer's included). */
async function domainOf(deps: ApiDeps, customerId: number, name: string): Promise<DomainRow> {
  const d = await ownDomain(deps.store.domains, customerId, name);
  if (!d) throw new ApiError('not_found', 'No such domain.');
  return d;
}
