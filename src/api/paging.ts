import { ApiError } from '../domain/errors.js';

/** `?limit=&after=` (lists are paged by cursor, newest first: docs/api.md); `after` is the `next` of the previous page. */
export function parsePage(q: { limit?: string; after?: string }, max = 100): { limit: number; after?: number } {
  const limit = q.limit === undefined ? 20 : Number(q.limit);
  const details: Record<string, string[]> = {};
  if (!Number.isInteger(limit) || limit < 1 || limit > max) details.limit = [`must be an integer from 1 to ${max}`];
  const after = q.after === undefined ? undefined : Number(q.after);
  if (after !== undefined && (!Number.isInteger(after) || after < 1))
    details.after = ['must be a cursor from a previous page'];
  if (Object.keys(details).length) throw new ApiError('validation_failed', 'Invalid paging parameters.', details);
  return after === undefined ? { limit } : { limit, after };
}
