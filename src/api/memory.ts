import type { FastifyReply } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { MemoryBudget } from '../lib/memory-budget.js';
import { reclaimAfter } from '../lib/reclaim.js';

/** How long a request waits for room in the budget before it is refused with 503. */
export const BUDGET_WAIT_MS = 60_000;

/**
 * Waits until `bytes` fit in the shared memory budget, in arrival order, and gives them back
 * when the response is over, however it ends. Refused with 503 (`unavailable`, Retry-After)
 * after BUDGET_WAIT_MS; nothing is held for a client that leaves while it waits.
 */
export async function holdMemory(budget: MemoryBudget, reply: FastifyReply, bytes: number): Promise<void> {
  const hold = budget.open();
  const waited = new AbortController();
  const timer = setTimeout(() => waited.abort(), BUDGET_WAIT_MS);
  // The response's 'close' before it was sent: the connection is gone (the request's own 'close'
  // also fires once a body has been read, which is not a departure). After that, it ends the hold.
  reply.raw.once('close', () => {
    waited.abort();
    hold.release();
    // What the message left behind (its body, text, parsed form) is collected before the next
    // large one gets far (lib/reclaim.ts).
    reclaimAfter(bytes);
  });
  const granted = await hold.grow(bytes, waited.signal);
  clearTimeout(timer);
  if (!granted) {
    hold.release();
    throw new ApiError(
      'unavailable',
      'The server is handling other large messages and had no room for this one in time; retry shortly.',
    );
  }
}
