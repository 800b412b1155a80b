import type { FastifyInstance } from 'fastify';
import { parseSuppressionEntry } from '../../domain/addresses.js';
import { ApiError, Problems, validationError } from '../../domain/errors.js';
import { needs, requireKey } from '../authorization.js';
import type { ApiDeps } from '../deps.js';
import { parsePage } from '../paging.js';

const REASONS = ['hard_bounce', 'spam_complaint', 'manual', 'unsubscribe'];

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
    const body = (request.body ?? {}) as { address?: unknown; addresses?: unknown };
    if (body.addresses !== undefined) return reply.code(200).send(await addMany(deps, key.customer_id, body.addresses));
    const parsed = typeof body.address === 'string' ? parseSuppressionEntry(body.address) : null;
    if (!parsed?.ok)
      throw new ApiError('validation_failed', 'A valid address (or @domain) is required.', {
        address: [parsed ? parsed.error : 'is required'],
      });
    const [created] = await store.suppressions.addMany(
      key.customer_id,
      [{ address: parsed.value, reason: 'manual' }],
      clock.now(),
    );
    return reply.code(created ? 201 : 200).send({ address: parsed.value, reason: 'manual', created });
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

/** Most entries one `POST /api/v1/suppressions` takes in `addresses`. */
export const MAX_SUPPRESSIONS = 1000;

/**
 * `addresses`: up to MAX_SUPPRESSIONS addresses or `@domain`s, added together or not at all: one
 * refused entry refuses the request (422, each refused entry under `addresses[i]`), and nothing
 * is added.
 */
async function addMany(deps: ApiDeps, customerId: number, input: unknown) {
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_SUPPRESSIONS)
    throw new ApiError('validation_failed', `addresses must be an array of 1 to ${MAX_SUPPRESSIONS} addresses.`, {
      addresses: [`must be an array of 1 to ${MAX_SUPPRESSIONS} addresses or @domains`],
    });
  const p = new Problems();
  const entries: string[] = [];
  input.forEach((x, i) => {
    const e = typeof x === 'string' ? parseSuppressionEntry(x) : { ok: false as const, error: 'must be a string' };
    if (e.ok) entries.push(e.value);
    else p.add(`addresses[${i}]`, e.error);
  });
  if (!p.empty) throw validationError(p);
  const created = await deps.store.suppressions.addMany(
    customerId,
    entries.map((address) => ({ address, reason: 'manual' as const })),
    deps.clock.now(),
  );
  const data = entries.map((address, i) => ({ address, reason: 'manual', created: created[i]! }));
  const added = created.filter(Boolean).length;
  return { data, added, already: data.length - added };
}
