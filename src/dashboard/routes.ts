import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dashboard, DashboardDeps } from './server.js';
import { sendPage } from './server.js';
import { html, path, type Html } from './html.js';
import { layout, type PageContext } from './layout.js';
import { EVENT_TYPES, type EventType } from '../domain/events.js';
import { Problems } from '../domain/errors.js';
import { parseAddrSpec, normaliseDomain } from '../domain/addresses.js';
import { parseMessageFilters } from '../domain/message-search.js';
import { verifyPassword, DUMMY_HASH } from '../lib/password.js';
import { createSession, endSession, findUser, showCustomer } from '../store/users.js';
import { addCustomer, customerById, CUSTOMER_NAME, findCustomer, listCustomers } from '../store/customers.js';
import { createKey, getKey, listKeys, revokeKey, type KeyKind } from '../store/keys.js';
import { addDomain, findDomain, listDomains, setReceiving, type DomainRow } from '../store/domains.js';
import { cancelMessage, getMessage, searchMessages } from '../store/messages.js';
import { addSuppression, listSuppressions, removeSuppression, searchSuppressions } from '../store/suppressions.js';
import { deleteEndpoint, deliveriesOfMessage, disableEndpoint, enableEndpoint, eventById, getEndpoint, listAttempts, listEndpoints, type Endpoint } from '../store/webhooks.js';
import { getInbound, listInbound, setInboundLimits, inboundLimitsOf } from '../store/inbound.js';
import { overview } from '../store/overview.js';
import { domainRecords, verifyDomain } from '../domains/service.js';
import { inboundSummary, inboundView } from '../inbound/view.js';
import {
  customersBody,
  domainBody,
  domainsBody,
  endpointBody,
  inboundBody,
  inboundListBody,
  keysBody,
  loginPage,
  messageBody,
  messagesBody,
  overviewBody,
  revokeKeyBody,
  suppressionsBody,
  webhooksBody,
  type InboundPage,
} from './views.js';
import { OneTimeReveal } from './reveal.js';

type Req = FastifyRequest<{ Params: Record<string, string>; Querystring: Record<string, string | undefined> }>;

export function pageRoutes(dash: Dashboard, deps: DashboardDeps): void {
  const { app } = dash;
  const { db, clock, config } = deps;

  /** The signed-in context, or a redirect to the login page. */
  const ctx = (request: Req, reply: FastifyReply, section: string): PageContext | undefined => {
    const s = request.session;
    if (!s) {
      void reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
      return undefined;
    }
    const customer = customerById(db, s.customerId)!;
    return { session: s, customer, section, customers: s.user.role === 'admin' ? listCustomers(db) : [customer], flash: request.query.flash, error: request.query.error };
  };
  const page = (reply: FastifyReply, c: PageContext, title: string, body: Html) => sendPage(reply, layout(c, title, body));
  const back = (reply: FastifyReply, to: string, flash?: string, error?: string) => {
    const q = new URLSearchParams();
    if (flash) q.set('flash', flash);
    if (error) q.set('error', error);
    return reply.redirect(q.size ? `${to}${to.includes('?') ? '&' : '?'}${q}` : to, 303);
  };
  const notFound = (reply: FastifyReply) => reply.callNotFound();
  const reveal = new OneTimeReveal();
  /** A secret created by this session's last request, shown now and never again. */
  const revealed = (c: PageContext) => {
    const r = reveal.take(c.session.id, clock.now());
    return r
      ? html`<div class="flash" role="status"><p>${r.label}</p><div class="secret"><code id="${r.id}">${r.secret}</code><button type="button" class="secondary" data-copy="${r.id}">Copy</button></div></div>`
      : '';
  };
  const problemsText = (p: Problems) =>
    Object.entries(p.details)
      .map(([k, v]) => `${k}: ${v.join('; ')}`)
      .join(' · ');

  // ---- Sessions ---------------------------------------------------------------------------------
  app.get<{ Querystring: { next?: string; error?: string } }>('/login', async (request, reply) => {
    if (request.session) return reply.redirect('/', 303);
    return sendPage(reply, loginPage(request.query.next, request.query.error));
  });

  app.post('/login', async (request, reply) => {
    const f = request.form!;
    const email = (f.email ?? '').trim().toLowerCase().slice(0, 320);
    const address = request.ip;
    const now = clock.now();
    const wait = dash.throttle.wait(email, address, now);
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      return sendPage(reply.code(429).header('retry-after', String(seconds)), loginPage(f.next, `Too many failed attempts; try again in ${Math.ceil(seconds / 60)} minute(s).`));
    }
    const user = findUser(db, email);
    // A password is checked even for an unknown account, so the answer takes as long either way.
    const ok = await verifyPassword(f.password ?? '', user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok) {
      dash.throttle.fail(email, address, now);
      return sendPage(reply.code(401), loginPage(f.next, 'Wrong e-mail address or password.'));
    }
    dash.throttle.succeed(email);
    const shown = user.customer_id ?? findCustomer(db, 'default')?.id ?? listCustomers(db)[0]!.id;
    // A new session id at every login: a session fixed before login is never the one used after.
    if (request.session) endSession(db, request.session.id);
    const s = createSession(db, user, shown, now);
    reply.header('set-cookie', `${dash.cookie}=${s.id}; Path=/; HttpOnly; SameSite=Strict${dash.secure ? '; Secure' : ''}`);
    deps.log.info({ user: user.email }, 'dashboard login');
    const next = typeof f.next === 'string' && /^\/(?!\/)[^\\]*$/.test(f.next) ? f.next : '/';
    return reply.redirect(next, 303);
  });

  app.post('/logout', async (request, reply) => {
    if (request.session) endSession(db, request.session.id);
    reply.header('set-cookie', `${dash.cookie}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${dash.secure ? '; Secure' : ''}`);
    return reply.redirect('/login', 303);
  });

  app.post('/customer', async (request: Req, reply) => {
    const c = ctx(request, reply, '');
    if (!c) return;
    const target = c.session.user.role === 'admin' ? findCustomer(db, request.form!.customer ?? '') : undefined;
    if (!target) return notFound(reply);
    showCustomer(db, c.session.id, target.id);
    return back(reply, '/', `Showing customer ${target.name}`);
  });

  // ---- Overview ---------------------------------------------------------------------------------
  app.get('/', async (request: Req, reply) => {
    const c = ctx(request, reply, 'overview');
    if (!c) return;
    const now = clock.now();
    return page(reply, c, 'Overview', overviewBody(overview(db, c.customer.id, now), now));
  });

  // ---- API keys ---------------------------------------------------------------------------------
  app.get('/keys', async (request: Req, reply) => {
    const c = ctx(request, reply, 'keys');
    if (!c) return;
    return page(reply, c, 'API keys', html`${revealed(c)}${keysBody(c, listKeys(db, c.customer.id))}`);
  });

  app.post('/keys', async (request: Req, reply) => {
    const c = ctx(request, reply, 'keys');
    if (!c) return;
    const f = request.form!;
    const kind: KeyKind = f.kind === 'sandbox' ? 'sandbox' : 'production';
    const name = (f.name ?? '').trim().slice(0, 100);
    const k = createKey(db, { customerId: c.customer.id, kind, name, now: clock.now() });
    deps.log.info({ key: k.id, customer: c.customer.name, user: c.session.user.email }, 'API key created in the dashboard');
    // The key is never stored: it is held for this session's next page only, then forgotten.
    reveal.put(c.session.id, { id: 'new-key', label: `Key ${k.id} created. Copy it now: it is shown only this once.`, secret: k.key }, clock.now());
    return back(reply, '/keys');
  });

  app.get('/keys/:id/revoke', async (request: Req, reply) => {
    const c = ctx(request, reply, 'keys');
    if (!c) return;
    const k = getKey(db, request.params.id!, c.customer.id);
    if (!k) return notFound(reply);
    return page(reply, c, 'Revoke API key', revokeKeyBody(c, k));
  });

  app.post('/keys/:id/revoke', async (request: Req, reply) => {
    const c = ctx(request, reply, 'keys');
    if (!c) return;
    const k = getKey(db, request.params.id!, c.customer.id);
    if (!k) return notFound(reply);
    revokeKey(db, k.id, clock.now());
    deps.log.info({ key: k.id, user: c.session.user.email }, 'API key revoked in the dashboard');
    return back(reply, '/keys', `Key ${k.id} revoked.`);
  });

  // ---- Domains ----------------------------------------------------------------------------------
  const domainOf = (c: PageContext, name: string | undefined): DomainRow | undefined => {
    const d = name ? findDomain(db, name) : undefined;
    return d && d.customer_id === c.customer.id ? d : undefined;
  };

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
    if (!n.ok) return back(reply, '/domains', undefined, `That is not a domain name: ${n.error}`);
    if (findDomain(db, n.value)) return back(reply, '/domains', undefined, `${n.value} is already registered.`);
    addDomain(db, { customerId: c.customer.id, name: n.value, receiving: request.form!.receiving === '1', now: clock.now() });
    return back(reply, path`/domains/${n.value}`, `Domain ${n.value} added: publish its DNS records, then verify.`);
  });

  app.get('/domains/:name', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    return page(reply, c, d.name, domainBody(c, d, domainRecords(d, config, clock.now()), inboundLimitsOf(db, d.id), undefined));
  });

  app.post('/domains/:name/verify', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const result = await verifyDomain(db, deps.resolver, config, d, clock.now());
    const fresh = findDomain(db, d.name)!;
    return page(reply, c, d.name, domainBody(c, fresh, domainRecords(fresh, config, clock.now()), inboundLimitsOf(db, d.id), result));
  });

  app.post('/domains/:name/receiving', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const on = request.form!.receiving === '1';
    setReceiving(db, d.id, on);
    return back(reply, path`/domains/${d.name}`, `Receiving ${on ? 'on' : 'off'}.`);
  });

  app.post('/domains/:name/limits', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const num = (v: string | undefined) => (v === undefined || v.trim() === '' ? null : Number(v));
    const rate = num(request.form!.rate_per_minute);
    const monthly = num(request.form!.monthly_limit);
    if ([rate, monthly].some((v) => v !== null && (!Number.isInteger(v) || v < 0 || v > 1_000_000_000)))
      return back(reply, path`/domains/${d.name}`, undefined, 'Limits are whole numbers from 0 (no limit) up; leave empty for the server default.');
    setInboundLimits(db, d.id, { ratePerMinute: rate, monthlyLimit: monthly });
    return back(reply, path`/domains/${d.name}`, 'Inbound limits saved.');
  });

  // ---- Webhooks ---------------------------------------------------------------------------------
  const endpointOf = (c: PageContext, id: string | undefined): Endpoint | undefined => (id ? getEndpoint(db, id, c.customer.id) : undefined);

  app.get('/webhooks', async (request: Req, reply) => {
    const c = ctx(request, reply, 'webhooks');
    if (!c) return;
    return page(reply, c, 'Webhooks', html`${revealed(c)}${webhooksBody(c, listEndpoints(db, c.customer.id))}`);
  });

  app.post('/webhooks', async (request: Req, reply) => {
    const c = ctx(request, reply, 'webhooks');
    if (!c) return;
    const f = request.form!;
    const events = (f['events[]'] ?? '').split('\n').filter(Boolean);
    const input = await deps.webhooks.validate({ url: (f.url ?? '').trim(), ...(events.length ? { events } : {}), description: (f.description ?? '').trim() });
    if (input instanceof Problems) return page(reply.code(422), { ...c, error: problemsText(input) }, 'Webhooks', webhooksBody(c, listEndpoints(db, c.customer.id)));
    const e = deps.webhooks.create(c.customer.id, input);
    reveal.put(c.session.id, { id: 'new-secret', label: `Endpoint ${e.id} created. Its signing secret is shown only this once:`, secret: e.secret }, clock.now());
    return back(reply, '/webhooks');
  });

  app.get('/webhooks/:id', async (request: Req, reply) => {
    const c = ctx(request, reply, 'webhooks');
    if (!c) return;
    const e = endpointOf(c, request.params.id);
    if (!e) return notFound(reply);
    return page(reply, c, 'Webhook endpoint', endpointBody(c, e, listAttempts(db, e.id, 50), undefined));
  });

  app.post('/webhooks/:id/test', async (request: Req, reply) => {
    const c = ctx(request, reply, 'webhooks');
    if (!c) return;
    const e = endpointOf(c, request.params.id);
    if (!e) return notFound(reply);
    const type = (EVENT_TYPES as readonly string[]).includes(request.form!.type ?? '') ? (request.form!.type as EventType) : 'email.delivered';
    const r = await deps.webhooks.test(e, type);
    return page(reply, c, 'Webhook endpoint', endpointBody(c, e, listAttempts(db, e.id, 50), r));
  });

  app.post('/webhooks/:id/replay/:event', async (request: Req, reply) => {
    const c = ctx(request, reply, 'webhooks');
    if (!c) return;
    const e = endpointOf(c, request.params.id);
    const ev = e ? eventById(db, request.params.event!, c.customer.id) : undefined;
    if (!e || !ev) return notFound(reply);
    const r = await deps.webhooks.replay(e, ev);
    return page(reply, c, 'Webhook endpoint', endpointBody(c, e, listAttempts(db, e.id, 50), r));
  });

  app.post('/webhooks/:id/state', async (request: Req, reply) => {
    const c = ctx(request, reply, 'webhooks');
    if (!c) return;
    const e = endpointOf(c, request.params.id);
    if (!e) return notFound(reply);
    const action = request.form!.action;
    if (action === 'enable') enableEndpoint(db, e.id);
    else if (action === 'disable') disableEndpoint(db, e.id, `disabled by ${c.session.user.email}`);
    else if (action === 'delete') {
      deleteEndpoint(db, e.id);
      return back(reply, '/webhooks', `Endpoint ${e.id} deleted.`);
    }
    return back(reply, path`/webhooks/${e.id}`, action === 'enable' ? 'Endpoint enabled.' : 'Endpoint disabled.');
  });

  // ---- Messages ---------------------------------------------------------------------------------
  app.get('/messages', async (request: Req, reply) => {
    const c = ctx(request, reply, 'messages');
    if (!c) return;
    const q = request.query;
    const filters = parseMessageFilters(q);
    const before = q.before !== undefined && /^\d{1,15}$/.test(q.before) ? Number(q.before) : undefined;
    const rows = filters instanceof Problems ? [] : searchMessages(db, { ...filters, customerId: c.customer.id, limit: 51, ...(before !== undefined ? { before } : {}) });
    const shown = rows.slice(0, 50);
    const next =
      rows.length > 50
        ? new URLSearchParams({ ...Object.fromEntries(Object.entries(q).filter(([k, v]) => k !== 'before' && v !== undefined && v !== '')), before: String(shown[shown.length - 1]!.email_id) })
        : null;
    return page(reply, filters instanceof Problems ? { ...c, error: problemsText(filters) } : c, 'Messages', messagesBody(q, shown, next));
  });

  app.get('/messages/:id', async (request: Req, reply) => {
    const c = ctx(request, reply, 'messages');
    if (!c) return;
    const m = getMessage(db, c.customer.id, request.params.id!);
    if (!m) return notFound(reply);
    return page(reply, c, 'Message', messageBody(c, m, deliveriesOfMessage(db, m.email_id)));
  });

  app.post('/messages/:id/cancel', async (request: Req, reply) => {
    const c = ctx(request, reply, 'messages');
    if (!c) return;
    const id = request.params.id!;
    const r = cancelMessage(db, c.customer.id, id, clock.now());
    if (r.kind === 'not_found') return notFound(reply);
    if (r.kind === 'too_late') return back(reply, path`/messages/${id}`, undefined, 'Too late to cancel: delivery has begun or ended.');
    return back(reply, path`/messages/${id}`, 'Canceled: nothing will be sent.');
  });

  // ---- Suppressions -----------------------------------------------------------------------------
  app.get('/suppressions', async (request: Req, reply) => {
    const c = ctx(request, reply, 'suppressions');
    if (!c) return;
    const q = (request.query.q ?? '').trim();
    const rows = q ? searchSuppressions(db, c.customer.id, q, 100) : listSuppressions(db, c.customer.id, { limit: 100 });
    return page(reply, c, 'Suppressions', suppressionsBody(c, q, rows));
  });

  app.post('/suppressions', async (request: Req, reply) => {
    const c = ctx(request, reply, 'suppressions');
    if (!c) return;
    const parsed = parseAddrSpec((request.form!.address ?? '').trim());
    if (!parsed.ok) return back(reply, '/suppressions', undefined, `Not an address: ${parsed.error}`);
    addSuppression(db, { customerId: c.customer.id, address: parsed.value.address, reason: 'manual', now: clock.now() });
    return back(reply, '/suppressions', `${parsed.value.address} is suppressed.`);
  });

  app.post('/suppressions/remove', async (request: Req, reply) => {
    const c = ctx(request, reply, 'suppressions');
    if (!c) return;
    const address = request.form!.address ?? '';
    if (!removeSuppression(db, c.customer.id, address)) return back(reply, '/suppressions', undefined, 'That address was not suppressed.');
    return back(reply, '/suppressions', `${address} removed from the suppression list.`);
  });

  // ---- Inbound ----------------------------------------------------------------------------------
  app.get('/inbound', async (request: Req, reply) => {
    const c = ctx(request, reply, 'inbound');
    if (!c) return;
    const before = request.query.before && /^\d{1,15}$/.test(request.query.before) ? Number(request.query.before) : undefined;
    const rows = listInbound(db, { customerId: c.customer.id, limit: 51, ...(before !== undefined ? { before } : {}) });
    const shown = rows.slice(0, 50).map(inboundSummary);
    return page(reply, c, 'Inbound', inboundListBody(shown, rows.length > 50 ? rows[49]!.created_at : undefined));
  });

  app.get('/inbound/:id', async (request: Req, reply) => {
    const c = ctx(request, reply, 'inbound');
    if (!c) return;
    const row = getInbound(db, request.params.id!, c.customer.id);
    if (!row) return notFound(reply);
    const v = (await inboundView(row)) as InboundPage;
    return page(reply, c, 'Received message', inboundBody(row.id, v));
  });

  app.get('/inbound/:id/raw', async (request: Req, reply) => {
    const c = ctx(request, reply, 'inbound');
    if (!c) return;
    const row = getInbound(db, request.params.id!, c.customer.id);
    if (!row) return notFound(reply);
    return reply.type('message/rfc822').header('content-disposition', `attachment; filename="${row.id}.eml"`).send(row.raw);
  });

  // The message's own HTML, for the sandboxed frame only: its own policy allows no script, no
  // connection, no remote image or font, nothing but inline styles and data: images.
  app.get('/inbound/:id/html', async (request: Req, reply) => {
    const c = ctx(request, reply, 'inbound');
    if (!c) return;
    const row = getInbound(db, request.params.id!, c.customer.id);
    if (!row) return notFound(reply);
    const v = (await inboundView(row)) as { html?: string | null };
    return reply
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox")
      .header('x-frame-options', 'SAMEORIGIN')
      .type('text/html; charset=utf-8')
      .send(v.html ?? '');
  });

  // ---- Customers (admins) -------------------------------------------------------------------------
  app.get('/customers', async (request: Req, reply) => {
    const c = ctx(request, reply, 'customers');
    if (!c) return;
    if (c.session.user.role !== 'admin') return notFound(reply);
    return page(reply, c, 'Customers', customersBody(c, listCustomers(db)));
  });

  app.post('/customers', async (request: Req, reply) => {
    const c = ctx(request, reply, 'customers');
    if (!c) return;
    if (c.session.user.role !== 'admin') return notFound(reply);
    const name = (request.form!.name ?? '').trim();
    if (!CUSTOMER_NAME.test(name)) return back(reply, '/customers', undefined, 'A customer name is 1-63 letters, digits, "_", "." or "-".');
    if (findCustomer(db, name)) return back(reply, '/customers', undefined, `Customer ${name} exists already.`);
    addCustomer(db, name, clock.now());
    return back(reply, '/customers', `Customer ${name} created.`);
  });
}
