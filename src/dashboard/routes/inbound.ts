import { inboundSummary, inboundView } from '../../inbound/view.js';
import type { Pages } from '../pages.js';
import { sendDownload, sendMailHtml } from '../untrusted.js';
import { type InboundPage, inboundBody, inboundListBody } from '../views/inbound.js';

/** The dashboard's inbound pages and actions. */
export function inboundRoutes(p: Pages): void {
  const { store, page } = p;
  const inbound = p.area('inbound');
  /** The received message of the path, if it is this customer's. */
  const received = inbound.of((c, request) => store.inbound.get(request.params.id!, c.customer.id));
  inbound.get('/inbound', async ({ c, request, reply }) => {
    const before =
      request.query.before && /^\d{1,15}$/.test(request.query.before) ? Number(request.query.before) : undefined;
    const rows = await store.inbound.list({
      customerId: c.customer.id,
      limit: 51,
      ...(before !== undefined ? { before } : {}),
    });
    const shown = rows.slice(0, 50).map(inboundSummary);
    return page(
      reply,
      c,
      'Inbound',
      inboundListBody(c.now, shown, rows.length > 50 ? rows[49]!.created_at : undefined),
    );
  });

  received.get('/inbound/:id', async ({ c, reply }, row) => {
    const v = (await inboundView(row)) as InboundPage;
    return page(reply, c, 'Received message', inboundBody(c.now, row.id, v));
  });

  received.get('/inbound/:id/raw', async ({ reply }, row) =>
    sendDownload(reply, { filename: `${row.id}.eml`, body: row.raw, type: 'message/rfc822' }),
  );

  // The message's own HTML, for the sandboxed frame only, as a sent message's (untrusted.ts).
  received.get('/inbound/:id/html', async ({ reply }, row) => {
    const v = (await inboundView(row)) as { html?: string | null };
    return sendMailHtml(reply, v.html ?? '');
  });
}
