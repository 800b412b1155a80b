import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, refusal } from '../domain/errors.js';
import { type AuthCache, acceptSend } from '../store/auth-cache.js';
import type { AcceptResult, BatchInput, BatchResult, SendInput, SendingDomain } from '../store/model.js';
import type { Standing, Store } from '../store/store.js';
import { authenticateRequest, unauthorized } from './authorization.js';

export const SEND_ROUTE = '/api/v1/emails';

type HookDone = (e?: Error) => void;

/** What a send's commit answers once its refusals are errors: accepted, or an Idempotency-Key's replay or conflict. */
export type SendAnswer = Exclude<AcceptResult, { kind: 'suppressed' | 'rate_limited' }>;
export type BatchAnswer = Exclude<BatchResult, { kind: 'key_revoked' }>;

/**
 * The send path's key check, the "unchecked key" protocol (docs/architecture.md, "Keys"; docs/api.md,
 * Errors), in one place, so that a send takes one store round trip and a revoked key is still
 * refused:
 * 1. `POST /api/v1/emails` takes its key from the cache without reading auth_epoch (`authenticate`);
 * 2. the route takes the epoch the cache is at (`epoch`) before its lookups, the sender domain
 *    among them (`sendingDomain`);
 * 3. the store's commit checks key and domain again in the statement that stores the message
 *    (SQLite's writer when the epoch moved; PostgreSQL always) and answers the epoch it saw: the
 *    cache is dropped if it moved, and a refusal is the documented error: a revoked key 401, a
 *    domain removed or unverified 422/403 (`accept`, `acceptBatch`);
 * 4. any refusal before the commit re-reads the key first, so a revoked key hears 401 before
 *    anything else (`refusalFirst`, from the error handler).
 * The store side is store/auth-cache.ts (AuthCache, acceptSend).
 */
export class SendGate {
  /** `store` is read on a send only (an API built without a store still answers what needs none). */
  constructor(
    private readonly auth: AuthCache,
    private readonly store: Store,
  ) {}

  /**
   * The request's key, onto `request.apiKey`, then `next` (an onRequest hook's continuation): from
   * the cache unchecked on the send route, checked everywhere else; a refusal goes to `done`.
   */
  authenticate(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookDone,
    next: (request: FastifyRequest, reply: FastifyReply, done: HookDone) => void,
  ): void {
    const deferred = request.method === 'POST' && request.routeOptions.url === SEND_ROUTE;
    authenticateRequest(this.auth, request, !deferred).then((key) => {
      request.apiKey = key;
      request.keyUnchecked = deferred;
      next(request, reply, done);
    }, done);
  }

  /** The epoch to hand to the commit: taken before the send's lookups, so the commit re-checks anything that changed since. */
  get epoch(): string {
    return this.auth.epoch;
  }

  /** The send's sender domain (send/admit.ts judges it): never from a stale cache on a refusal. */
  sendingDomain(customerId: number, name: string): Promise<SendingDomain | undefined> {
    return this.auth.sendingDomain(customerId, name);
  }

  /** The customer's pause, if paused (send/admit.ts refuses its sends): never from a stale cache on a refusal. */
  pause(customerId: number): Promise<Standing | undefined> {
    return this.auth.pause(customerId);
  }

  /** Whether the customer may choose this pool for a send (send/admit.ts judges it): never from a stale cache on a refusal. */
  mayChoosePool(customerId: number, pool: string): Promise<{ allowed: boolean; choices: string[] }> {
    return this.auth.mayChoosePool(customerId, pool);
  }

  /** One message's commit; throws the ApiError of a refusal (401 for a key revoked meanwhile). */
  async accept(input: SendInput): Promise<SendAnswer> {
    const result = await acceptSend(this.auth, this.store.messages, input);
    switch (result.kind) {
      case 'key_revoked':
        throw unauthorized();
      case 'domain_unknown':
      case 'domain_unverified':
      case 'suppressed':
      case 'rate_limited':
      case 'customer_paused':
        throw refusal(result, input.senderDomain);
      default:
        return result;
    }
  }

  /** A batch's commit (its items' own refusals are in its response); throws 401 for a key revoked meanwhile. */
  async acceptBatch(input: BatchInput): Promise<BatchAnswer> {
    const result = await this.store.messages.acceptBatch(input);
    this.auth.observe(result.authEpoch);
    if (result.kind === 'key_revoked') throw unauthorized();
    return result;
  }

  /**
   * The error a request gets: for a key taken unchecked, the key is read again first, so a key
   * revoked since the cache last looked hears 401 before any other answer.
   */
  async refusalFirst(request: FastifyRequest, api: ApiError | undefined): Promise<ApiError | undefined> {
    if (!request.keyUnchecked || api?.code === 'unauthorized') return api;
    try {
      await authenticateRequest(this.auth, request, true);
    } catch (e) {
      if (e instanceof ApiError) return e;
    }
    return api;
  }
}
