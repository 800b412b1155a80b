import type { FastifyReply } from 'fastify';
import { serverIdentity } from '../../config/settings.js';
import type { DoctorReport } from '../../domain/doctor.js';
import { addressesOfSpf, dmarcSummary } from '../../domain-setup/dmarc.js';
import { addDomainFor, parseDomainName } from '../../domain-setup/manage.js';
import { domainRecords, returnPathStatus, verifyDomain } from '../../domain-setup/records.js';
import type { DomainRow } from '../../store/model.js';
import type { SignedIn } from '../area.js';
import { html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import type { Pages } from '../pages.js';
import { dmarcSection } from '../views/dmarc.js';
import { doctorDomain } from '../views/doctor.js';
import { domainBody, domainsBody } from '../views/domains.js';

/** The dashboard's domains pages and actions. */
export function domainsRoutes(p: Pages): void {
  const { store, clock, config, deps, page, back } = p;
  const domains = p.area('domains');
  /** The domain named in the path, if it is this customer's. */
  const domain = domains.of(async (c, request): Promise<DomainRow | undefined> => {
    const d = request.params.name ? await store.domains.find(request.params.name) : undefined;
    return d && d.customer_id === c.customer.id ? d : undefined;
  });
  /** A domain's page: its DNS records, inbound limits, and the result of a verification just run. */
  const domainPage = async (
    reply: FastifyReply,
    c: PageContext,
    d: DomainRow,
    verified: Parameters<typeof domainBody>[4],
  ) =>
    page(
      reply,
      c,
      d.name,
      html`${domainBody(
        c,
        d,
        domainRecords(d, config, clock.now()),
        await store.domains.inboundLimits(d.id),
        verified,
        returnPathStatus(d, config),
      )}${deps.doctor ? doctorOf(deps.doctor(), d.name, c.now) : ''}${await dmarcOf(p, d, c.now)}`,
    );

  domains.get('/domains', async ({ c, reply }) => {
    const rows = await store.domains.list(c.customer.id);
    return page(reply, c, 'Domains', domainsBody(c, rows));
  });

  domains.post('/domains', (r) => addDomain(p, r));

  domain.get('/domains/:name', ({ c, reply }, d) => domainPage(reply, c, d, undefined));

  domain.post('/domains/:name/verify', async ({ c, reply }, d) => {
    const result = await verifyDomain(store.domains, deps.resolver, config, d, clock.now());
    const fresh = (await store.domains.find(d.name))!;
    return domainPage(reply, c, fresh, result);
  });

  domain.post('/domains/:name/receiving', async ({ request, reply }, d) => {
    const on = request.form!.receiving === '1';
    await store.domains.setReceiving(d.id, on);
    return back(reply, path`/domains/${d.name}`, { notice: on ? 'receiving-on' : 'receiving-off' });
  });

  domain.post('/domains/:name/limits', (r, d) => saveLimits(p, r, d));
}

const DMARC_DAYS = 7;

/** The domain page's DMARC section: the aggregate reports of the last week about it. */
async function dmarcOf({ store, config }: Pages, d: DomainRow, now: number) {
  const summary = await dmarcSummary(store, addressesOfSpf(serverIdentity(config).spfSources), {
    domain: d.name,
    customerId: d.customer_id,
    since: now - DMARC_DAYS * 86_400_000,
    until: now + 1,
  });
  return dmarcSection(summary, DMARC_DAYS, config.smtp.dmarc_address !== '');
}

/** The domain page's deliverability section: the domain's checks in the doctor's last report. */
function doctorOf(report: DoctorReport | null, name: string, now: number) {
  return doctorDomain(
    report,
    (report?.checks ?? []).filter((k) => k.domain === name),
    now,
  );
}

/** POST /domains: the form's name added for this customer, unless it is no domain name or is registered already. */
async function addDomain(p: Pages, { c, request, reply }: SignedIn): Promise<unknown> {
  const { store, clock, page, back } = p;
  const n = parseDomainName(request.form!.name ?? '');
  const refuse = async (error: string) =>
    page(reply.code(422), { ...c, error }, 'Domains', domainsBody(c, await store.domains.list(c.customer.id)));
  if (!n.ok) return refuse(`That is not a domain name: ${n.error}`);
  const added = await addDomainFor(store.domains, {
    customerId: c.customer.id,
    name: n.value,
    receiving: request.form!.receiving === '1',
    now: clock.now(),
  });
  if (added.kind === 'taken') return refuse(`${n.value} is already registered.`);
  return back(reply, path`/domains/${n.value}`, { notice: 'domain-added' });
}

/** POST /domains/:name/limits: the domain's inbound limits (empty: none), each a whole number up to a billion. */
async function saveLimits(p: Pages, { request, reply }: SignedIn, d: DomainRow): Promise<unknown> {
  const { store, back } = p;
  const num = (v: string | undefined) => (v === undefined || v.trim() === '' ? null : Number(v));
  const rate = num(request.form!.rate_per_minute);
  const monthly = num(request.form!.monthly_limit);
  if ([rate, monthly].some((v) => v !== null && (!Number.isInteger(v) || v < 0 || v > 1_000_000_000)))
    return back(reply, path`/domains/${d.name}`, { error: 'limits-invalid' });
  await store.domains.setInboundLimits(d.id, { ratePerMinute: rate, monthlyLimit: monthly });
  return back(reply, path`/domains/${d.name}`, { notice: 'limits-saved' });
}
