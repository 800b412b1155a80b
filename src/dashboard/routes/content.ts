import { attachmentAt, readContent } from '../content.js';
import type { Pages } from '../pages.js';
import { sendDownload, sendMailHtml } from '../untrusted.js';

/** A sent message's content beyond its page: its HTML for the sandboxed frame, its attachments and its source, as downloads. */
export function contentRoutes(p: Pages): void {
  const { store, notFound } = p;
  /** The message's stored content, if it is this customer's. */
  const stored = p.area('messages').of((c, request) => store.messages.content(c.customer.id, request.params.id!));
  /** A file name from a Message-ID: the characters a file name may safely have. */
  const fileName = (id: string, ext: string) => `${id.replace(/[^A-Za-z0-9._@-]/g, '_')}.${ext}`;

  stored.get('/messages/:id/html', async ({ reply }, s) => {
    const content = await readContent(s);
    if (content.kind !== 'stored' || content.html === undefined) return notFound(reply);
    return sendMailHtml(reply, content.html);
  });

  stored.get('/messages/:id/attachments/:n', async ({ request, reply }, s) => {
    const a = /^\d{1,4}$/.test(request.params.n!) ? await attachmentAt(s, Number(request.params.n)) : undefined;
    if (!a) return notFound(reply);
    return sendDownload(reply, { filename: a.filename, body: a.bytes });
  });

  stored.get('/messages/:id/source', async ({ request, reply }, s) => {
    const content = await readContent(s);
    if (content.kind !== 'stored') return notFound(reply);
    const message = content.source.kind !== 'request';
    return sendDownload(reply, {
      filename: fileName(request.params.id!, message ? 'eml' : 'json'),
      body: content.source.bytes,
      type: message ? 'message/rfc822' : 'application/json',
    });
  });
}
