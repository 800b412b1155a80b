import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../domain/errors.js';
import { inboundSummary, inboundView, viewJson } from '../../inbound/view.js';
import { LARGE_MESSAGE_BYTES } from '../../lib/memory-budget.js';
import { needs, requireKey } from '../authorization.js';
import type { ApiDeps } from '../deps.js';
import { holdMemory } from '../memory.js';
import { parsePage } from '../paging.js';

export function inboundRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { store } = deps;
  const find = async (customerId: number, id: string) => {
    const row = await store.inbound.get(id, customerId);
    if (!row) throw new ApiError('not_found', 'No such received message.');
    return row;
  };
  app.get<{ Querystring: { limit?: string; after?: string } }>(
    '/api/v1/inbound',
    needs('inbound:read'),
    async (request) => {
      const customerId = requireKey(request).customer_id;
      const page = parsePage(request.query);
      const rows = await store.inbound.list({
        customerId,
        limit: page.limit + 1,
        ...(page.after !== undefined ? { before: page.after } : {}),
      });
      const data = rows.slice(0, page.limit);
      return {
        data: data.map(inboundSummary),
        next: rows.length > page.limit ? String(data[data.length - 1]!.created_at) : null,
      };
    },
  );
  // A large message is parsed and sent back as JSON with its attachments in Base64: it waits for
  // room in the shared memory budget first, as a large request body does.
  app.get<{ Params: { id: string } }>('/api/v1/inbound/:id', needs('inbound:read'), async (request, reply) => {
    const customerId = requireKey(request).customer_id;
    const size = await store.inbound.size(request.params.id, customerId);
    if (size === undefined) throw new ApiError('not_found', 'No such received message.');
    if (size >= LARGE_MESSAGE_BYTES) await holdMemory(deps.budget, reply, size);
    return reply
      .type('application/json; charset=utf-8')
      .send(viewJson(await inboundView(await find(customerId, request.params.id))));
  });
  app.get<{ Params: { id: string } }>('/api/v1/inbound/:id/raw', needs('inbound:read'), async (request, reply) =>
    reply.type('message/rfc822').send((await find(requireKey(request).customer_id, request.params.id)).raw),
  );
}
