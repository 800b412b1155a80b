import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Problems } from '../domain/errors.js';
import { type Area, type AreaRules, area } from './area.js';
import { type Dashboard, type DashboardDeps, type Req, sendPage } from './dashboard.js';
import { type Html, html } from './html.js';
import { layout, type PageContext } from './layout.js';
import { type ErrorCode, errorText, type NoticeCode, noticeText } from './notices.js';
import { OneTimeReveal } from './reveal.js';

/** What every page and action of the dashboard uses: the store and clock, its routes by section, and the ways to answer. */
export interface Pages {
  app: FastifyInstance;
  dash: Dashboard;
  deps: DashboardDeps;
  store: DashboardDeps['store'];
  clock: DashboardDeps['clock'];
  config: DashboardDeps['config'];
  /** The routes of one section of the dashboard, with their preconditions stated once (area.ts). */
  area: (section: string, rules?: AreaRules) => Area;
  page: (reply: FastifyReply, c: PageContext, title: string, body: Html) => unknown;
  /** A redirect after a form, with what the next page says, by code (notices.ts). */
  back: (reply: FastifyReply, to: string, say?: { notice?: NoticeCode; error?: ErrorCode }) => unknown;
  notFound: (reply: FastifyReply) => unknown;
  reveal: OneTimeReveal;
  /** A secret created by this session's last request, shown now and never again. */
  revealed: (c: PageContext) => Html | string;
  problemsText: (p: Problems) => string;
}

export function pages(dash: Dashboard, deps: DashboardDeps): Pages {
  const { app } = dash;
  const { store, clock, config } = deps;

  /** The signed-in context, or a redirect to the login page. */
  const ctx = async (request: Req, reply: FastifyReply, section: string): Promise<PageContext | undefined> => {
    const s = request.session;
    if (!s) {
      void reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
      return undefined;
    }
    const customer = (await store.customers.byId(s.customerId))!;
    return {
      session: s,
      customer,
      section,
      now: clock.now(),
      customers: s.user.role === 'admin' ? await store.customers.list() : [customer],
      notice: noticeText(request.query.notice),
      error: errorText(request.query.error),
    };
  };
  const page = (reply: FastifyReply, c: PageContext, title: string, body: Html) =>
    sendPage(reply, layout(c, title, body));
  const back = (reply: FastifyReply, to: string, say: { notice?: NoticeCode; error?: ErrorCode } = {}) => {
    const q = new URLSearchParams();
    if (say.notice) q.set('notice', say.notice);
    if (say.error) q.set('error', say.error);
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

  const areaOf = (section: string, rules?: AreaRules) => area({ app, ctx, notFound }, section, rules);

  return { app, dash, deps, store, clock, config, area: areaOf, page, back, notFound, reveal, revealed, problemsText };
}
