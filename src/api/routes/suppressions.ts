import type { FastifyInstance } from 'fastify';
import { parseAddrSpec } from '../../domain/addresses.js';
import { ApiError } from '../../domain/errors.js';
import { needs, requireKey } from '../authorization.js';
import type { ApiDeps } from '../deps.js';
import { parsePage } from '../paging.js';

const REASONS = ['hard_bounce', 'spam_complaint', 'manual'];

export function suppressionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { store, clock } = deps;
  app.get<{ Querystring: { limit?: string; after?: string; reason?: string } }>(
    '/api/v1/suppressions',
    needs('suppressions:write'),
    async (request) => {
      const key = requireKey(request);
      const page = parsePage(request.query);
      const reason = request.query.reason;
      if (reason !== undefined && !REASONS.includes(reason))
        throw new ApiError('validation_failed', 'Unknown reason.', {
          reason: [`must be one of ${REASONS.join(', ')}`],
        });
      const rows = await store.suppressions.list(key.customer_id, {
        limit: page.limit + 1,
        ...(page.after !== undefined ? { before: page.after } : {}),
        ...(reason ? { reason } : {}),
      });
      const data = rows.slice(0, page.limit);
      return {
        data: data.map((r) => ({
          address: r.address,
          reason: r.reason,
          message_id: r.message_id,
          created_at: new Date(r.created_at).toISOString(),
        })),
        next: rows.length > page.limit ? String(data[data.length - 1]!.created_at) : null,
      };
    },
  );

  app.post('/api/v1/suppressions', needs('suppressions:write'), async (request, reply) => {
    const key = requireKey(request);
    const body = (request.body ?? {}) as { address?: unknown };
    const parsed = typeof body.address === 'string' ? parseAddrSpec(body.address.trim()) : null;
    if (!parsed?.ok)
      throw new ApiError('validation_failed', 'A valid address is required.', {
        address: [parsed ? parsed.error : 'is required'],
      });
    const created = await store.suppressions.add({
      customerId: key.customer_id,
      address: parsed.value.address,
      reason: 'manual',
      now: clock.now(),
    });
    return reply
      .code(created ? 201 : 200)
      .send({ address: parsed.value.address.toLowerCase(), reason: 'manual', created });
  });

  app.delete<{ Params: { address: string } }>(
    '/api/v1/suppressions/:address',
    needs('suppressions:write'),
    async (request) => {
      const key = requireKey(request);
      if (!(await store.suppressions.remove(key.customer_id, request.params.address)))
        throw new ApiError('not_found', 'That address is not on the suppression list.');
      return { address: request.params.address.toLowerCase(), deleted: true };
    },
  );
}
