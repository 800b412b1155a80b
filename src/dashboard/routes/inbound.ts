import { inboundSummary, inboundView } from '../../inbound/view.js';
import { inboundBody, inboundListBody, type InboundPage } from '../views/inbound.js';
import type { Req } from '../dashboard.js';
import type { Pages } from '../pages.js';
import { sendDownload, sendMailHtml } from '../untrusted.js';

/** The dashboard's inbound pages and actions. */
export function inboundRoutes(p: Pages): void {
  const { app, store, ctx, page, notFound } = p;
  app.get('/inbound', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'inbound');
    if (!c) return;
    const before = request.query.before && /^\d{1,15}$/.test(request.query.before) ? Number(request.query.before) : undefined;
    const rows = await store.inbound.list({ customerId: c.customer.id, limit: 51, ...(before !== undefined ? { before } : {}) });
    const shown = rows.slice(0, 50).map(inboundSummary);
    return page(reply, c, 'Inbound', inboundListBody(c.now, shown, rows.length > 50 ? rows[49]!.created_at : undefined));
  });

  app.get('/inbound/:id', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'inbound');
    if (!c) return;
    const row = await store.inbound.get(request.params.id!, c.customer.id);
    if (!row) return notFound(reply);
    const v = (await inboundView(row)) as InboundPage;
    return page(reply, c, 'Received message', inboundBody(c.now, row.id, v));
  });

  app.get('/inbound/:id/raw', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'inbound');
    if (!c) return;
    const row = await store.inbound.get(request.params.id!, c.customer.id);
    if (!row) return notFound(reply);
    return sendDownload(reply, { filename: `${row.id}.eml`, body: row.raw, type: 'message/rfc822' });
  });

  // The message's own HTML, for the sandboxed frame only, as a sent message's (untrusted.ts).
  app.get('/inbound/:id/html', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'inbound');
    if (!c) return;
    const row = await store.inbound.get(request.params.id!, c.customer.id);
    if (!row) return notFound(reply);
    const v = (await inboundView(row)) as { html?: string | null };
    return sendMailHtml(reply, v.html ?? '');
  });
}
