import type { FastifyReply } from 'fastify';
import { path } from '../html.js';
import type { PageContext } from '../layout.js';
import { normaliseDomain } from '../../domain/addresses.js';
import type { DomainRow } from '../../store/model.js';
import { domainRecords, verifyDomain } from '../../domains/service.js';
import { domainBody, domainsBody } from '../views/domains.js';
import type { Req } from '../dashboard.js';
import type { Pages } from '../pages.js';

/** The dashboard's domains pages and actions. */
export function domainsRoutes(p: Pages): void {
  const { app, store, clock, config, deps, ctx, page, back, notFound } = p;
  const domainOf = async (c: PageContext, name: string | undefined): Promise<DomainRow | undefined> => {
    const d = name ? await store.domains.find(name) : undefined;
    return d && d.customer_id === c.customer.id ? d : undefined;
  };
  /** A domain's page: its DNS records, inbound limits, and the result of a verification just run. */
  const domainPage = async (reply: FastifyReply, c: PageContext, d: DomainRow, verified: Parameters<typeof domainBody>[4]) =>
    page(reply, c, d.name, domainBody(c, d, domainRecords(d, config, clock.now()), await store.domains.inboundLimits(d.id), verified));

  app.get('/domains', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'domains');
    if (!c) return;
    const rows = await store.domains.list(c.customer.id);
    return page(reply, c, 'Domains', domainsBody(c, rows));
  });

  app.post('/domains', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'domains');
    if (!c) return;
    const n = normaliseDomain((request.form!.name ?? '').trim().replace(/\.$/, ''));
    const refuse = async (error: string) => page(reply.code(422), { ...c, error }, 'Domains', domainsBody(c, await store.domains.list(c.customer.id)));
    if (!n.ok) return refuse(`That is not a domain name: ${n.error}`);
    if (await store.domains.find(n.value)) return refuse(`${n.value} is already registered.`);
    await store.domains.add({ customerId: c.customer.id, name: n.value, receiving: request.form!.receiving === '1', now: clock.now() });
    return back(reply, path`/domains/${n.value}`, { notice: 'domain-added' });
  });

  app.get('/domains/:name', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'domains');
    if (!c) return;
    const d = await domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    return domainPage(reply, c, d, undefined);
  });

  app.post('/domains/:name/verify', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'domains');
    if (!c) return;
    const d = await domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const result = await verifyDomain(store.domains, deps.resolver, config, d, clock.now());
    const fresh = (await store.domains.find(d.name))!;
    return domainPage(reply, c, fresh, result);
  });

  app.post('/domains/:name/receiving', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'domains');
    if (!c) return;
    const d = await domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const on = request.form!.receiving === '1';
    await store.domains.setReceiving(d.id, on);
    return back(reply, path`/domains/${d.name}`, { notice: on ? 'receiving-on' : 'receiving-off' });
  });

  app.post('/domains/:name/limits', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'domains');
    if (!c) return;
    const d = await domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const num = (v: string | undefined) => (v === undefined || v.trim() === '' ? null : Number(v));
    const rate = num(request.form!.rate_per_minute);
    const monthly = num(request.form!.monthly_limit);
    if ([rate, monthly].some((v) => v !== null && (!Number.isInteger(v) || v < 0 || v > 1_000_000_000))) return back(reply, path`/domains/${d.name}`, { error: 'limits-invalid' });
    await store.domains.setInboundLimits(d.id, { ratePerMinute: rate, monthlyLimit: monthly });
    return back(reply, path`/domains/${d.name}`, { notice: 'limits-saved' });
  });
}
