import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { requireKey } from '../auth.js';
import { ApiError } from '../../domain/errors.js';
import { getInbound, inboundSize } from '../../store/inbound.js';
import { inboundView, viewJson } from '../../inbound/view.js';
import { holdMemory } from '../memory.js';
import { LARGE_MESSAGE_BYTES } from '../../lib/memory-budget.js';

export function inboundRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { db } = deps;
  const find = (customerId: number, id: string) => {
    const row = getInbound(db, id, customerId);
    if (!row) throw new ApiError('not_found', 'No such received message.');
    return row;
  };
  // A large message is parsed and sent back as JSON with its attachments in Base64: it waits for
  // room in the shared memory budget first, as a large request body does.
  app.get<{ Params: { id: string } }>('/api/v1/inbound/:id', async (request, reply) => {
    const customerId = requireKey(request).customer_id;
    const size = inboundSize(db, request.params.id, customerId);
    if (size === undefined) throw new ApiError('not_found', 'No such received message.');
    if (size >= LARGE_MESSAGE_BYTES) await holdMemory(deps.budget, reply, size);
    return reply.type('application/json; charset=utf-8').send(viewJson(await inboundView(find(customerId, request.params.id))));
  });
  app.get<{ Params: { id: string } }>('/api/v1/inbound/:id/raw', async (request, reply) =>
    reply.type('message/rfc822').send(find(requireKey(request).customer_id, request.params.id).raw),
  );
}
