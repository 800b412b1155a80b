import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { requireKey } from '../auth.js';
import { ApiError } from '../../domain/errors.js';
import { getInbound } from '../../store/inbound.js';
import { inboundView } from '../../inbound/view.js';

export function inboundRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { db } = deps;
  const find = (customerId: number, id: string) => {
    const row = getInbound(db, id, customerId);
    if (!row) throw new ApiError('not_found', 'No such received message.');
    return row;
  };
  app.get<{ Params: { id: string } }>('/api/v1/inbound/:id', async (request) => inboundView(find(requireKey(request).customer_id, request.params.id)));
  app.get<{ Params: { id: string } }>('/api/v1/inbound/:id/raw', async (request, reply) =>
    reply.type('message/rfc822').send(find(requireKey(request).customer_id, request.params.id).raw),
  );
}
