import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.js';
import type { QueueOp } from '../../store/model.js';
import { needs, requireKey } from '../authorization.js';
import type { ApiDeps } from '../deps.js';

/**
 * A key's own messages in the queue (docs/api.md; the rules: store/queue-ops.ts, as the CLI's
 * `posthaste queue`): retry its deferred recipients now, or delete what of it has not been sent.
 */
export function queueRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post<{ Params: { message_id: string } }>('/api/v1/emails/:message_id/retry', needs('send'), async (request) => {
    const { view, change } = await apply(deps, request, 'retry');
    // This node looks now; the others are woken by the store (PostgreSQL).
    if (change.changed > 0) deps.onAccepted?.();
    return { message_id: view.message_id, retried: change.changed };
  });

  // Canceling is the queue's delete of what of the message waits (QueueStore.cancel), as every door's cancel.
  app.delete<{ Params: { message_id: string } }>('/api/v1/emails/:message_id', needs('send'), async (request) => {
    const { key, view } = await ownMessage(deps, request);
    const r = await deps.store.queue.cancel(view.email_id, key.customer_id, deps.clock.now());
    if (r.kind === 'not_found') throw new ApiError('not_found', 'No such message.');
    if (r.kind === 'too_late')
      throw new ApiError('conflict', 'Nothing of the message is left to cancel: every recipient is done.', {
        recipients: Object.entries(r.states).map(([state, n]) => `${n} ${state}`),
      });
    return deps.store.messages.get(key.customer_id, view.message_id);
  });
}

/** The key's own message (404 otherwise). */
async function ownMessage(deps: ApiDeps, request: FastifyRequest<{ Params: { message_id: string } }>) {
  const key = requireKey(request);
  const view = await deps.store.messages.get(key.customer_id, request.params.message_id);
  if (!view) throw new ApiError('not_found', 'No such message.');
  return { key, view };
}

/** The key's own message, and the operation applied to its waiting recipients. */
async function apply(deps: ApiDeps, request: FastifyRequest<{ Params: { message_id: string } }>, op: QueueOp) {
  const { key, view } = await ownMessage(deps, request);
  const sel = { messageRowId: view.email_id, customerId: key.customer_id };
  const change = await deps.store.queue.apply(op, sel, deps.clock.now(), false);
  return { key, view, change };
}
