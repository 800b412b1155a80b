import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dashboard, DashboardDeps } from './server.js';
import { sendPage } from './server.js';
import { html, path, Html } from './html.js';
import { layout, type PageContext } from './layout.js';
import { EVENT_TYPES, type EventType } from '../domain/events.js';
import { Problems } from '../domain/errors.js';
import { parseAddrSpec, normaliseDomain } from '../domain/addresses.js';
import { parseMessageFilters } from '../domain/message-search.js';
import { verifyPassword, DUMMY_HASH } from '../lib/password.js';
import { createSession, endSession, findUser, showCustomer } from '../store/users.js';
import { addCustomer, customerById, CUSTOMER_NAME, findCustomer, listCustomers } from '../store/customers.js';
import { createKey, getKey, listKeys, revokeKey, type KeyKind } from '../store/keys.js';
import { addDomain, findDomain, listDomains, type DomainRow } from '../store/domains.js';
import { setInboundLimits } from '../store/inbound.js';
import { getMessage, searchMessages } from '../store/messages.js';
import { addSuppression, listSuppressions, removeSuppression, searchSuppressions } from '../store/suppressions.js';
import { deleteEndpoint, deliveriesOfMessage, disableEndpoint, enableEndpoint, eventById, getEndpoint, listAttempts, listEndpoints, type Endpoint } from '../store/webhooks.js';
import { getInbound, listInbound } from '../store/inbound.js';
import { overview } from '../store/overview.js';
import { domainRecords, verifyDomain } from '../domains/service.js';
import { inboundSummary, inboundView } from '../inbound/view.js';
import { endpointView } from '../webhooks/service.js';
import { chart } from './chart.js';
import { OneTimeReveal } from './reveal.js';

type Req = FastifyRequest<{ Params: Record<string, string>; Querystring: Record<string, string | undefined> }>;

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + 'Z');

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
  const problemsText = (p: Problems) => Object.entries(p.details).map(([k, v]) => `${k}: ${v.join('; ')}`).join(' · ');

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
    const o = overview(db, c.customer.id, clock.now());
    const stat = (label: string, v: number | string) => html`<div class="stat"><b>${v}</b><span>${label}</span></div>`;
    return page(
      reply,
      c,
      'Overview',
      html`<h2>Last 24 hours</h2>
        <div class="stats">${(['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const).map((k) => stat(k, o.last24h[k]))}</div>
        <h2>Last 7 days</h2>
        <div class="stats">${(['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const).map((k) => stat(k, o.last7d[k]))}</div>
        <div class="card">${chart(o.hourly)}</div>
        <h2>Now</h2>
        <div class="stats">${stat('queued', o.queue.queued)}${stat('deferred', o.queue.deferred)}${stat('oldest deferred', iso(o.oldestDeferredAt))}${stat('webhook deliveries waiting', o.webhookBacklog)}</div>`,
    );
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
    return page(
      reply,
      c,
      'Revoke API key',
      html`<div class="card"><p>Revoke <code>${k.id}</code> (${k.name || 'unnamed'}, ${k.kind})? Requests with it are refused from the next one on. This cannot be undone.</p>
        <form method="post" action="${path`/keys/${k.id}/revoke`}">${csrf(c)}<button class="danger">Revoke key</button> <a href="/keys">Cancel</a></form></div>`,
    );
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
    return page(
      reply,
      c,
      'Domains',
      html`<div class="card"><form method="post" action="/domains" class="row">${csrf(c)}
          <label>Domain <input name="name" required placeholder="example.com" autocomplete="off"></label>
          <label><span><input type="checkbox" name="receiving" value="1"> also receive mail</span></label>
          <button>Add domain</button></form></div>
        <div class="card"><table><thead><tr><th>Domain</th><th>Verified</th><th>Receiving</th><th class="opt">Added</th></tr></thead><tbody>
        ${rows.length ? rows.map((d) => html`<tr><td><a href="${path`/domains/${d.name}`}">${d.name}</a></td><td>${d.verified_at ? html`<span class="badge ok">verified</span>` : html`<span class="badge pending">not verified</span>`}</td><td>${d.receiving ? 'on' : 'off'}</td><td class="opt">${iso(d.created_at)}</td></tr>`) : html`<tr><td colspan="4" class="muted">No domains yet.</td></tr>`}
        </tbody></table></div>`,
    );
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
    return page(reply, c, d.name, domainBody(c, d, domainRecords(d, config), inboundLimits(d.id), undefined));
  });

  app.post('/domains/:name/verify', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const result = await verifyDomain(db, deps.resolver, config, d, clock.now());
    const fresh = findDomain(db, d.name)!;
    return page(reply, c, d.name, domainBody(c, fresh, domainRecords(fresh, config), inboundLimits(d.id), result));
  });

  app.post('/domains/:name/receiving', async (request: Req, reply) => {
    const c = ctx(request, reply, 'domains');
    if (!c) return;
    const d = domainOf(c, request.params.name);
    if (!d) return notFound(reply);
    const on = request.form!.receiving === '1';
    db.statement('UPDATE domains SET receiving = ? WHERE id = ?').run(on ? 1 : 0, d.id);
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

  const inboundLimits = (id: number) =>
    db.statement('SELECT inbound_rate_per_minute AS rate, inbound_monthly_limit AS monthly FROM domains WHERE id = ?').get(id) as { rate: number | null; monthly: number | null };

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
    const next = rows.length > 50 ? new URLSearchParams({ ...Object.fromEntries(Object.entries(q).filter(([k, v]) => k !== 'before' && v !== undefined && v !== '')), before: String(shown[shown.length - 1]!.email_id) }) : null;
    return page(reply, filters instanceof Problems ? { ...c, error: problemsText(filters) } : c, 'Messages', messagesBody(q, shown, next));
  });

  app.get('/messages/:id', async (request: Req, reply) => {
    const c = ctx(request, reply, 'messages');
    if (!c) return;
    const m = getMessage(db, c.customer.id, request.params.id!);
    if (!m) return notFound(reply);
    return page(reply, c, 'Message', messageBody(m, deliveriesOfMessage(db, m.email_id)));
  });

  // ---- Suppressions -----------------------------------------------------------------------------
  app.get('/suppressions', async (request: Req, reply) => {
    const c = ctx(request, reply, 'suppressions');
    if (!c) return;
    const q = (request.query.q ?? '').trim();
    const rows = q ? searchSuppressions(db, c.customer.id, q, 100) : listSuppressions(db, c.customer.id, { limit: 100 });
    return page(
      reply,
      c,
      'Suppressions',
      html`<div class="card"><form method="get" action="/suppressions" class="row" role="search"><label>Address or its beginning <input name="q" value="${q}" type="search"></label><button>Search</button></form></div>
        <div class="card"><form method="post" action="/suppressions" class="row">${csrf(c)}<label>Suppress an address <input name="address" type="email" required></label><button>Add</button></form></div>
        <div class="card"><table><thead><tr><th>Address</th><th>Reason</th><th class="opt">Message</th><th class="opt">Since</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
        ${rows.length ? rows.map((s) => html`<tr><td class="wrap">${s.address}</td><td><span class="badge">${s.reason}</span></td><td class="opt wrap">${s.message_id ? html`<a href="${path`/messages/${s.message_id}`}">${s.message_id}</a>` : '—'}</td><td class="opt">${iso(s.created_at)}</td>
          <td><form method="post" action="/suppressions/remove" class="inline">${csrf(c)}<input type="hidden" name="address" value="${s.address}"><button class="secondary" aria-label="${`Remove ${s.address}`}">Remove</button></form></td></tr>`) : html`<tr><td colspan="5" class="muted">No suppressed addresses${q ? ' match' : ''}.</td></tr>`}
        </tbody></table></div>`,
    );
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
    return page(
      reply,
      c,
      'Inbound',
      html`<div class="card"><table><thead><tr><th>Received</th><th>From</th><th>Subject</th><th class="opt">To</th><th class="opt">Size</th></tr></thead><tbody>
        ${shown.length ? shown.map((m) => html`<tr><td>${m.received_at.replace('T', ' ').slice(0, 19)}</td><td class="wrap">${m.from}</td><td><a href="${path`/inbound/${m.id}`}">${m.subject || '(no subject)'}</a></td><td class="opt wrap">${m.to.join(', ')}</td><td class="opt">${m.size}</td></tr>`) : html`<tr><td colspan="5" class="muted">Nothing received yet.</td></tr>`}
        </tbody></table>${rows.length > 50 ? html`<p><a href="${`/inbound?before=${rows[49]!.created_at}`}">Older</a></p>` : ''}</div>`,
    );
  });

  app.get('/inbound/:id', async (request: Req, reply) => {
    const c = ctx(request, reply, 'inbound');
    if (!c) return;
    const row = getInbound(db, request.params.id!, c.customer.id);
    if (!row) return notFound(reply);
    const v = (await inboundView(row)) as Record<string, unknown> & { headers?: Array<{ name: string; value: string }>; html?: string | null; text?: string | null; attachments?: Array<{ filename: string | null; content_type: string; size: number }> };
    return page(
      reply,
      c,
      'Received message',
      html`<div class="card"><dl>
          <dt>From</dt><dd class="wrap">${String(v.from ?? '')}</dd><dt>To</dt><dd class="wrap">${((v.to as string[] | undefined) ?? []).join(', ')}</dd>
          <dt>Subject</dt><dd>${String(v.subject ?? '')}</dd><dt>Received</dt><dd>${String(v.received_at)}</dd>
          <dt>Authentication</dt><dd>${Object.entries((v.authentication as Record<string, string>) ?? {}).map(([k, r]) => html`<span class="badge">${k}=${r}</span> `)}</dd></dl>
          <p><a href="${path`/inbound/${row.id}/raw`}" download="${`${row.id}.eml`}">Download the raw message</a></p></div>
        ${v.html ? html`<h2>HTML</h2><iframe class="mail" title="The message's HTML, without scripts or remote content" sandbox="" referrerpolicy="no-referrer" src="${path`/inbound/${row.id}/html`}"></iframe>` : ''}
        <h2>Text</h2><div class="card"><pre>${String(v.text ?? '(no text part)')}</pre></div>
        ${v.attachments?.length ? html`<h2>Attachments</h2><div class="card"><ul>${v.attachments.map((a) => html`<li>${a.filename ?? '(unnamed)'} · ${a.content_type} · ${a.size} bytes</li>`)}</ul></div>` : ''}
        <h2>Headers</h2><div class="card"><pre>${(v.headers ?? []).map((h) => `${h.name}: ${h.value}\n`).join('')}</pre></div>`,
    );
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
    return page(
      reply,
      c,
      'Customers',
      html`<div class="card"><form method="post" action="/customers" class="row">${csrf(c)}<label>New customer <input name="name" required pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,62}" title="letters, digits, dot, dash, underscore; at most 63"></label><button>Create</button></form></div>
        <div class="card"><table><thead><tr><th>Name</th><th>Created</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
        ${listCustomers(db).map((x) => html`<tr><td>${x.name}</td><td>${iso(x.created_at)}</td><td><form method="post" action="/customer" class="inline">${csrf(c)}<input type="hidden" name="customer" value="${x.name}"><button class="secondary" aria-label="${`Show ${x.name}`}">Show</button></form></td></tr>`)}
        </tbody></table></div>`,
    );
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

// ---- Page bodies ----------------------------------------------------------------------------------

const csrf = (c: PageContext) => html`<input type="hidden" name="_csrf" value="${c.session.csrf}">`;

function loginPage(next: string | undefined, error: string | undefined): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Log in · posthaste</title><link rel="stylesheet" href="/static/app.css"></head>
    <body><main class="login"><h1>posthaste</h1>${error ? html`<div class="flash error" role="alert">${error}</div>` : ''}
    <form method="post" action="/login"><input type="hidden" name="next" value="${next ?? '/'}">
      <label>E-mail address <input name="email" type="email" autocomplete="username" required autofocus></label>
      <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
      <button>Log in</button></form></main></body></html>`;
}

function keysBody(c: PageContext, keys: ReturnType<typeof listKeys>): Html {
  return html`<div class="card"><form method="post" action="/keys" class="row">${csrf(c)}
      <label>Name <input name="name" maxlength="100" placeholder="e.g. web app"></label>
      <label>Kind <select name="kind"><option value="production">production (ph_live_)</option><option value="sandbox">sandbox (ph_test_)</option></select></label>
      <button>Create key</button></form></div>
    <div class="card"><table><thead><tr><th>Name</th><th>Kind</th><th>Handle</th><th class="opt">Created</th><th class="opt">Last send</th><th>State</th></tr></thead><tbody>
    ${keys.length ? keys.map((k) => html`<tr><td>${k.name || '—'}</td><td>${k.kind}</td><td><code>${k.id}</code></td><td class="opt">${iso(k.created_at)}</td><td class="opt">${iso(k.last_used_at)}</td>
      <td>${k.revoked_at ? html`<span class="badge failed">revoked ${iso(k.revoked_at)}</span>` : html`<a href="${path`/keys/${k.id}/revoke`}">Revoke…</a>`}</td></tr>`) : html`<tr><td colspan="6" class="muted">No keys yet.</td></tr>`}
    </tbody></table></div>`;
}

function domainBody(
  c: PageContext,
  d: DomainRow,
  records: ReturnType<typeof domainRecords>,
  limits: { rate: number | null; monthly: number | null },
  result: Awaited<ReturnType<typeof verifyDomain>> | undefined,
): Html {
  const check = (name: string, purpose: string) => result?.checks.find((k) => k.name === name && k.purpose === purpose);
  return html`${result ? html`<div class="${result.verified ? 'flash' : 'flash error'}" role="status">${result.verified ? 'Verified: every required record is published.' : 'Not verified yet: see the records marked missing.'}</div>` : ''}
    <div class="card"><p>${d.verified_at ? html`<span class="badge ok">verified</span> since ${iso(d.verified_at)}` : html`<span class="badge pending">not verified</span> sending from it is refused until it is`}</p>
      <form method="post" action="${path`/domains/${d.name}/verify`}" class="inline">${csrf(c)}<button>Verify now</button></form></div>
    <h2>DNS records to publish</h2>
    <div class="card"><table><thead><tr><th>Purpose</th><th>Type</th><th>Name</th><th>Value</th>${result ? html`<th>Found</th>` : ''}</tr></thead><tbody>
    ${records.map((r, i) => {
      const k = check(r.name, r.purpose);
      return html`<tr><td>${r.purpose}</td><td>${r.type}</td><td class="wrap"><code>${r.name}</code></td>
        <td class="wrap"><code id="${`rec-${i}`}">${r.value}</code> <button type="button" class="secondary" data-copy="${`rec-${i}`}" aria-label="${`Copy the ${r.purpose} record`}">Copy</button></td>
        ${result ? html`<td>${k?.found ? html`<span class="badge ok">found</span>` : html`<span class="badge missing">missing</span>${k?.seen.length ? html`<br><small class="wrap">seen: ${k.seen.join(' | ')}</small>` : ''}`}</td>` : ''}</tr>`;
    })}
    </tbody></table></div>
    <h2>Receiving</h2>
    <div class="card"><form method="post" action="${path`/domains/${d.name}/receiving`}" class="row">${csrf(c)}
      <label>Receive mail for ${d.name} <select name="receiving"><option value="1" ${d.receiving ? new Html('selected') : ''}>on</option><option value="0" ${d.receiving ? '' : new Html('selected')}>off</option></select></label><button>Save</button></form>
      <form method="post" action="${path`/domains/${d.name}/limits`}" class="row">${csrf(c)}
      <label>Messages per minute <input name="rate_per_minute" inputmode="numeric" value="${limits.rate ?? ''}" placeholder="server default"></label>
      <label>Messages per month <input name="monthly_limit" inputmode="numeric" value="${limits.monthly ?? ''}" placeholder="server default"></label><button>Save limits</button></form></div>`;
}

function webhooksBody(c: PageContext, endpoints: Endpoint[]): Html {
  return html`<div class="card"><form method="post" action="/webhooks">${csrf(c)}
      <div class="row"><label>URL <input name="url" type="url" required size="40" placeholder="https://example.com/hooks/posthaste"></label>
      <label>Description <input name="description" maxlength="500"></label></div>
      <fieldset><legend>Events (none ticked: all)</legend>${EVENT_TYPES.map((t) => html`<label><span><input type="checkbox" name="events[]" value="${t}"> ${t}</span></label>`)}</fieldset>
      <button>Add endpoint</button></form></div>
    <div class="card"><table><thead><tr><th>URL</th><th>Events</th><th>State</th><th class="opt">Created</th></tr></thead><tbody>
    ${endpoints.length ? endpoints.map((e) => html`<tr><td class="wrap"><a href="${path`/webhooks/${e.id}`}">${e.url}</a><br><small class="muted">${e.description}</small></td><td>${e.events ? e.events.join(', ') : 'all'}</td>
      <td>${e.enabled ? html`<span class="badge ok">enabled</span>` : html`<span class="badge failed">disabled</span> ${e.disabledReason ?? ''}`}</td><td class="opt">${iso(e.createdAt)}</td></tr>`) : html`<tr><td colspan="4" class="muted">No endpoints yet.</td></tr>`}
    </tbody></table></div>`;
}

function endpointBody(c: PageContext, e: Endpoint, attempts: ReturnType<typeof listAttempts>, result: Awaited<ReturnType<DashboardDeps['webhooks']['test']>> | undefined): Html {
  const v = endpointView(e);
  return html`${result ? html`<div class="${result.success ? 'flash' : 'flash error'}" role="status"><p>${result.type} ${result.event_id}: ${result.status !== null ? `HTTP ${result.status}` : (result.error ?? 'no answer')} in ${result.durationMs} ms</p>${result.response ? html`<pre>${result.response}</pre>` : ''}</div>` : ''}
    <div class="card"><p class="wrap"><b>${e.url}</b></p><p>${e.description}</p><p>Events: ${(v.events as string[]).join(', ')}</p>
      <p>${e.enabled ? html`<span class="badge ok">enabled</span>` : html`<span class="badge failed">disabled</span> ${e.disabledReason ?? ''}`}</p>
      <form method="post" action="${path`/webhooks/${e.id}/test`}" class="row">${csrf(c)}<label>Event type <select name="type">${EVENT_TYPES.map((t) => html`<option>${t}</option>`)}</select></label><button>Send test event</button></form>
      <form method="post" action="${path`/webhooks/${e.id}/state`}" class="row">${csrf(c)}
        ${e.enabled ? html`<button name="action" value="disable" class="secondary">Disable</button>` : html`<button name="action" value="enable" class="secondary">Enable</button>`}
        <button name="action" value="delete" class="danger">Delete endpoint</button></form></div>
    <h2>Recent deliveries</h2>
    <div class="card"><table><thead><tr><th>Time</th><th>Event</th><th>Status</th><th class="opt">Duration</th><th>Response</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
    ${attempts.length ? attempts.map((a) => html`<tr><td>${a.at.replace('T', ' ').slice(0, 19)}</td><td>${a.event_type}<br><small class="muted wrap">${a.event_id}</small></td>
      <td><span class="${`badge ${a.status !== null && a.status >= 200 && a.status < 300 ? 'ok' : 'failed'}`}">${a.status ?? a.error ?? '—'}</span></td><td class="opt">${a.duration_ms} ms</td>
      <td class="wrap"><pre>${a.response ?? ''}</pre></td>
      <td>${a.delivery_state !== null ? html`<form method="post" action="${path`/webhooks/${e.id}/replay/${a.event_id}`}" class="inline">${csrf(c)}<button class="secondary">Replay</button></form>` : ''}</td></tr>`) : html`<tr><td colspan="6" class="muted">No deliveries yet.</td></tr>`}
    </tbody></table></div>`;
}

function messagesBody(q: Record<string, string | undefined>, rows: ReturnType<typeof searchMessages>, next: URLSearchParams | null): Html {
  const opt = (v: string) => html`<option ${q.state === v ? new Html('selected') : ''}>${v}</option>`;
  return html`<div class="card"><form method="get" action="/messages" class="row" role="search">
      <label>Recipient <input name="recipient" type="email" value="${q.recipient ?? ''}"></label>
      <label>Message-ID <input name="message_id" value="${q.message_id ?? ''}"></label>
      <label>State <select name="state"><option value="">any</option>${['queued', 'deferred', 'delivered', 'bounced', 'complained', 'suppressed'].map(opt)}</select></label>
      <label>Since <input name="since" type="date" value="${q.since ?? ''}"></label>
      <label>Until <input name="until" type="date" value="${q.until ?? ''}"></label>
      <button>Search</button></form></div>
    <div class="card"><table><thead><tr><th>Accepted</th><th>Subject</th><th class="opt">From</th><th>Recipients</th></tr></thead><tbody>
    ${rows.length ? rows.map((m) => html`<tr><td>${m.created_at.replace('T', ' ').slice(0, 19)}</td><td><a href="${path`/messages/${m.message_id}`}">${m.subject || '(no subject)'}</a>${m.sandbox ? html` <span class="badge">sandbox</span>` : ''}</td><td class="opt wrap">${m.from}</td>
      <td>${Object.entries(m.states).map(([s, n]) => html`<span class="${`badge ${s}`}">${n} ${s}</span> `)}</td></tr>`) : html`<tr><td colspan="4" class="muted">No messages match.</td></tr>`}
    </tbody></table>${next ? html`<p><a href="${`/messages?${next}`}">Older</a></p>` : ''}</div>`;
}

function messageBody(m: NonNullable<ReturnType<typeof getMessage>>, hooks: ReturnType<typeof deliveriesOfMessage>): Html {
  return html`<div class="card"><dl><dt>Subject</dt><dd>${m.subject}</dd><dt>From</dt><dd class="wrap">${m.from}</dd><dt>Message-ID</dt><dd class="wrap"><code>${m.message_id}</code></dd>
      <dt>Accepted</dt><dd>${m.created_at}</dd>${m.sandbox ? html`<dt>Sandbox</dt><dd>yes: simulated, nothing sent</dd>` : ''}
      ${Object.keys(m.metadata).length ? html`<dt>Metadata</dt><dd><pre>${JSON.stringify(m.metadata, null, 2)}</pre></dd>` : ''}</dl></div>
    ${m.recipients.map((r) => {
      const events = m.events.filter((e) => e.data.recipient === r.address);
      return html`<h2>${r.address} <span class="${`badge ${r.state}`}">${r.state}</span></h2>
        <div class="card"><p class="muted">${r.field} · ${r.attempts} attempt(s)${r.next_attempt_at ? ` · next attempt ${r.next_attempt_at}` : ''}</p>
        ${r.last_response ? html`<p>Last reply: <code class="wrap">${JSON.stringify(r.last_response)}</code></p>` : ''}
        <ol>${events.map((e) => {
          const d = e.data as Record<string, unknown> & { response?: { code?: number; enhanced_code?: string; message?: string }; attempt?: number; mx?: string };
          const hooksOf = hooks.filter((h) => h.event_id === e.id);
          return html`<li><b>${e.type}</b> at ${e.timestamp}${d.attempt ? ` · attempt ${d.attempt}` : ''}${d.mx ? ` · ${d.mx}` : ''}
            ${d.response ? html`<br><code class="wrap">${[d.response.code, d.response.enhanced_code, d.response.message].filter((x) => x !== undefined && x !== '').join(' ')}</code>` : ''}
            ${hooksOf.map((h) => html`<br><small>webhook → <a href="${path`/webhooks/${h.endpoint_id}`}">${h.endpoint_id}</a>: <span class="${`badge ${h.state}`}">${h.state}</span> after ${h.attempts} attempt(s)</small>`)}</li>`;
        })}</ol></div>`;
    })}`;
}
