import type { FastifyReply } from 'fastify';
import { path } from '../html.js';
import type { PageContext } from '../layout.js';
import { normaliseDomain } from '../../domain/addresses.js';
import { addDomain, findDomain, listDomains, setReceiving, type DomainRow } from '../../store/domains.js';
import { setInboundLimits, inboundLimitsOf } from '../../store/inbound.js';
import { domainRecords, verifyDomain } from '../../domains/service.js';
import { domainBody, domainsBody } from '../views/domains.js';
import type { Pages, Req } from '../pages.js';

/** The dashboard's domains pages and actions. */
export function domainsRoutes(p: Pages): void {
  const { app, db, clock, config, deps, ctx, page, back, notFound } = p;
  const domainOf = (c: PageContext, name: string | undefined): DomainRow | undefined => {
    const d = name ? findDomain(db, name) : undefined;
    return d && d.customer_id === c.customer.id ? d : undefined;
  };
  /** A domain's page: its DNS records, inbound limits, and the result of a verification just run. */
  const domainPage = (reply: FastifyReply, c: PageContext, d: DomainRow, verified: Parameters<typeof domainBody>[4]) =>
    page(reply, c, d.name, domainBody(c, d, domainRecords(d, config, clock.now()), inboundLimitsOf(db, d.id), verified));

  app.get('/domains', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const rows = listDomains(db, c.customer.id);
    return page(reply, c, 'Domains', domainsBody(c, rows));
  });

  app.post('/domains', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const n = normaliseDomain((request.form!.name ?? '').trim().replace(/\.$/, ''));
    const refuse = (error: string) => page(reply.code(422), { ...c, error }, 'Domains', domainsBody(c, listDomains(db, c.customer.id)));
    if (!n.ok) return refuse(`That is not a domain name: ${n.error}`);
    if (findDomain(db, n.value)) return refuse(`${n.value} is already registered.`);
    addDomain(db, { customerId: c.customer.id, name: n.value, receiving: request.form!.receiving === '1', now: clock.now() });
    return back(reply, path`/domains/${n.value}`, { notice: 'domain-added' });
  });

  app.get('/domains/:name', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    return domainPage(reply, c, d, undefined);
  });

  app.post('/domains/:name/verify', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const result = await verifyDomain(db, deps.resolver, config, d, clock.now());
    const fresh = findDomain(db, d.name)!;
    return domainPage(reply, c, fresh, result);
  });

  app.post('/domains/:name/receiving', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const on = request.form!.receiving === '1';
    setReceiving(db, d.id, on);
    return back(reply, path`/domains/${d.name}`, { notice: on ? 'receiving-on' : 'receiving-off' });
  });

  app.post('/domains/:name/limits', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const num = (v: string | undefined) => (v === undefined || v.trim() === '' ? null : Number(v));
    const rate = num(request.form!.rate_per_minute);
    const monthly = num(request.form!.monthly_limit);
    if ([rate, monthly].some((v) => v !== null && (!Number.isInteger(v) || v < 0 || v > 1_000_000_000))) return back(reply, path`/domains/${d.name}`, { error: 'limits-invalid' });
    setInboundLimits(db, d.id, { ratePerMinute: rate, monthlyLimit: monthly });
    return back(reply, path`/domains/${d.name}`, { notice: 'limits-saved' });
  });
}
