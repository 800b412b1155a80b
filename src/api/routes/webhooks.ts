import type { FastifyInstance } from 'fastify';
import { ApiError, Problems } from '../../domain/errors.js';
import { EVENT_TYPES, type EventType } from '../../domain/events.js';
import type { Endpoint } from '../../store/model.js';
import { endpointView, rotationView } from '../../webhooks/service.js';
import { needs, requireKey } from '../authorization.js';
import type { ApiDeps } from '../deps.js';
import { parsePage } from '../paging.js';

export function webhookRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { store, webhooks } = deps;

  app.post('/api/v1/webhooks', needs('webhooks:write'), async (request, reply) => {
    const key = requireKey(request);
    const input = await webhooks.validate((request.body ?? {}) as Record<string, unknown>);
    if (input instanceof Problems)
      throw new ApiError('validation_failed', 'The webhook endpoint is invalid; see details.', input.details);
    return reply.code(201).send(endpointView(await webhooks.create(key.customer_id, input), true));
  });

  app.get('/api/v1/webhooks', needs('webhooks:write'), async (request) => {
    const key = requireKey(request);
    return { data: (await store.webhooks.listEndpoints(key.customer_id)).map((e) => endpointView(e)) };
  });

  app.get<{ Params: { id: string } }>('/api/v1/webhooks/:id', needs('webhooks:write'), async (request) =>
    endpointView(await endpointOf(deps, requireKey(request).customer_id, request.params.id)),
  );

  app.delete<{ Params: { id: string } }>('/api/v1/webhooks/:id', needs('webhooks:write'), async (request) => {
    const e = await endpointOf(deps, requireKey(request).customer_id, request.params.id);
    await store.webhooks.deleteEndpoint(e.id);
    return { id: e.id, deleted: true };
  });

  app.patch<{ Params: { id: string } }>('/api/v1/webhooks/:id', needs('webhooks:write'), async (request) => {
    const e = await endpointOf(deps, requireKey(request).customer_id, request.params.id);
    const changes = await webhooks.validateChanges((request.body ?? {}) as Record<string, unknown>);
    if (changes instanceof Problems)
      throw new ApiError('validation_failed', 'The changes are invalid; see details.', changes.details);
    const updated = await store.webhooks.updateEndpoint(e.id, changes);
    if (!updated) throw new ApiError('not_found', 'No such webhook endpoint.');
    return endpointView(updated);
  });

  app.post<{ Params: { id: string } }>(
    '/api/v1/webhooks/:id/rotate-secret',
    needs('webhooks:write'),
    async (request) => {
      const e = await endpointOf(deps, requireKey(request).customer_id, request.params.id);
      const rotated = await webhooks.rotateSecret(e);
      if (!rotated) throw new ApiError('not_found', 'No such webhook endpoint.');
      return rotationView(rotated);
    },
  );

  app.post<{ Params: { id: string } }>('/api/v1/webhooks/:id/test', needs('webhooks:write'), async (request) => {
    const e = await endpointOf(deps, requireKey(request).customer_id, request.params.id);
    const body = (request.body ?? {}) as { type?: unknown };
    const type = (body.type ?? 'email.delivered') as EventType;
    if (!EVENT_TYPES.includes(type))
      throw new ApiError('validation_failed', 'Unknown event type.', {
        type: [`must be one of ${EVENT_TYPES.join(', ')}`],
      });
    return webhooks.test(e, type);
  });

  deliveryRoutes(app, deps);
}

/** The customer's endpoint of that id, or the API's not_found. */
async function endpointOf(deps: ApiDeps, customerId: number, id: string): Promise<Endpoint> {
  const e = await deps.store.webhooks.getEndpoint(id, customerId);
  if (!e) throw new ApiError('not_found', 'No such webhook endpoint.');
  return e;
}

/** An endpoint's deliveries: its attempts listed a page at a time, and one event sent to it again. */
function deliveryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { store, webhooks } = deps;
  app.get<{ Params: { id: string }; Querystring: { limit?: string; after?: string } }>(
    '/api/v1/webhooks/:id/deliveries',
    needs('webhooks:write'),
    async (request) => {
      const e = await endpointOf(deps, requireKey(request).customer_id, request.params.id);
      const page = parsePage(request.query);
      const rows = await store.webhooks.listAttempts(e.id, page.limit + 1, page.after);
      const more = rows.length > page.limit;
      const data = rows.slice(0, page.limit);
      return { data: data.map(({ cursor: _c, ...r }) => r), next: more ? String(data[data.length - 1]!.cursor) : null };
    },
  );

  app.post<{ Params: { id: string; event_id: string } }>(
    '/api/v1/webhooks/:id/deliveries/:event_id/replay',
    needs('webhooks:write'),
    async (request) => {
      const key = requireKey(request);
      const e = await endpointOf(deps, key.customer_id, request.params.id);
      const event = await store.webhooks.eventById(request.params.event_id, key.customer_id);
      if (!event) throw new ApiError('not_found', 'No such event.');
      return webhooks.replay(e, event);
    },
  );
}
