import { Problems } from '../../domain/errors.js';
import { parseMessageFilters } from '../../domain/message-search.js';
import { QUEUE_OPS, type QueueOp, WAKING_OPS } from '../../store/model.js';
import { readContent } from '../content.js';
import { path } from '../html.js';
import { QUEUE_NOTICES } from '../notices.js';
import type { Pages } from '../pages.js';
import { messageBody } from '../views/message.js';
import { messagesBody } from '../views/messages.js';

/** The dashboard's messages pages and actions. */
export function messagesRoutes(p: Pages): void {
  const { store, clock, config, page, back, notFound, problemsText } = p;
  const messages = p.area('messages');
  /** The sent message of the path, if it is this customer's. */
  const message = messages.of((c, request) => store.messages.get(c.customer.id, request.params.id!));
  messages.get('/messages', async ({ c, request, reply }) => {
    const q = request.query;
    const filters = parseMessageFilters(q);
    const before = q.before !== undefined && /^\d{1,15}$/.test(q.before) ? Number(q.before) : undefined;
    const rows =
      filters instanceof Problems
        ? []
        : await store.messages.search({
            ...filters,
            customerId: c.customer.id,
            limit: 51,
            ...(before !== undefined ? { before } : {}),
          });
    const shown = rows.slice(0, 50);
    const next =
      rows.length > 50
        ? new URLSearchParams({
            ...Object.fromEntries(Object.entries(q).filter(([k, v]) => k !== 'before' && v !== undefined && v !== '')),
            before: String(shown[shown.length - 1]!.email_id),
          })
        : null;
    return page(
      reply,
      filters instanceof Problems ? { ...c, error: problemsText(filters) } : c,
      'Messages',
      messagesBody(c, q, shown, next),
    );
  });

  message.get('/messages/:id', async ({ c, reply }, m) => {
    const endpoints = new Map((await store.webhooks.listEndpoints(c.customer.id)).map((e) => [e.id, e.url]));
    const content = await readContent((await store.messages.content(c.customer.id, m.message_id))!);
    const waiting = await store.queue.list({ messageRowId: m.email_id, customerId: c.customer.id }, 10_000);
    return page(
      reply,
      c,
      'Message',
      messageBody(
        c,
        m,
        await store.messages.deliveriesOf(m.email_id),
        endpoints,
        content,
        config.retention.days,
        waiting,
      ),
    );
  });

  // The queue's operations on this message's waiting recipients (docs/operations.md, "The queue").
  message.post('/messages/:id/queue/:op', async ({ c, request, reply }, m) => {
    const op = request.params.op as QueueOp;
    if (!QUEUE_OPS.includes(op)) return notFound(reply);
    // Deleting a message's waiting recipients is canceling it: the one store function for it.
    const changed =
      op === 'delete'
        ? await store.queue.cancel(m.email_id, c.customer.id, clock.now()).then((r) => (r.kind === 'canceled' ? 1 : 0))
        : (await store.queue.apply(op, { messageRowId: m.email_id, customerId: c.customer.id }, clock.now(), false))
            .changed;
    if (changed > 0 && WAKING_OPS.has(op)) p.deps.onQueued?.();
    return back(reply, path`/messages/${m.message_id}`, {
      notice: changed > 0 ? QUEUE_NOTICES[op] : 'queue-unchanged',
    });
  });

  // Canceling is the queue's delete of what of the message waits (QueueStore.cancel), as the API's DELETE.
  message.post('/messages/:id/cancel', async ({ c, reply }, m) => {
    const r = await store.queue.cancel(m.email_id, c.customer.id, clock.now());
    if (r.kind === 'not_found') return notFound(reply);
    if (r.kind === 'too_late') return back(reply, path`/messages/${m.message_id}`, { error: 'too-late' });
    return back(reply, path`/messages/${m.message_id}`, { notice: 'message-canceled' });
  });
}
