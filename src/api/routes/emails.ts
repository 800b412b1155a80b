import type { FastifyInstance, FastifyReply } from 'fastify';
import { formatDuration } from '../../config/load.js';
import { formatMailbox } from '../../domain/addresses.js';
import { ApiError, Problems, refusal, UnsendableMessage, validationError } from '../../domain/errors.js';
import { messageIdOfField, parseMessageFilters } from '../../domain/message-search.js';
import { recipientsOf, type SendRequest, validateSendRequest } from '../../domain/send-request.js';
import { composedSize, encodedSizeBound, encodedSizeFloor } from '../../mime/compose.js';
import { acceptInputOf, admitSend, isRefused, type SendContent, sendRules } from '../../send/admit.js';
import type { ApiKeyInfo } from '../../store/model.js';
import { type AcceptInput, acceptedResponse, type BatchItemResult } from '../../store/model.js';
import { needs, requireKey } from '../authorization.js';
import type { ApiDeps } from '../deps.js';
import { parsePage } from '../paging.js';
import { SEND_ROUTE, type SendGate } from '../send-gate.js';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
export const BATCH_ROUTE = '/api/v1/emails/batch';
/** Most messages in one batch request. */
export const MAX_BATCH = 100;

/** The send endpoints (their key checked by the SendGate, send-gate.ts) and the message endpoints (docs/api.md). */
export function emailRoutes(app: FastifyInstance, deps: ApiDeps, gate: SendGate): void {
  sendRoute(app, deps, gate);
  batchRoute(app, deps, gate);
  listRoute(app, deps);
  getRoute(app, deps);
}

type Prepared = Omit<AcceptInput, 'idempotency'>;

/**
 * One send request made ready to store: validated, admitted (send/admit.ts: its sender domain
 * this customer's and verified, its Message-ID drawn), its encoded size within the limit. Throws
 * the ApiError the client gets. The route takes the epoch before this: the commit re-verifies key
 * and domain if anything changed since (send-gate.ts).
 */
async function prepare(
  deps: ApiDeps,
  gate: SendGate,
  key: ApiKeyInfo,
  body: unknown,
  stored: string | Uint8Array,
  now: number,
): Promise<Prepared> {
  const req = validBody(deps, body);
  const admitted = await admitSend(gate, sendRules(deps), {
    key,
    fromDomain: req.from.domain,
    unsubscribe: req.unsubscribe,
    ...(req.pool !== undefined ? { pool: req.pool } : {}),
    now,
  });
  if (isRefused(admitted)) throw refusal(admitted, req.from.domain);
  checkSchedule(deps, req, now);
  await checkEncodedSize(deps.config.limits.max_message_bytes, req, admitted.messageId, now);
  return acceptInputOf(key, admitted, contentOf(req, stored, now), now);
}

/** The body as a SendRequest, or the validation_failed the client gets. */
function validBody(deps: ApiDeps, body: unknown): SendRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new ApiError('validation_failed', 'A message must be a JSON object.', { body: ['must be a JSON object'] });
  const parsed = validateSendRequest(body as Record<string, unknown>, {
    maxRecipients: deps.send.current.maxRecipients,
  });
  if (parsed instanceof Problems) throw validationError(parsed);
  return parsed;
}

/** scheduled_at no further ahead than limits.max_schedule_ahead. */
function checkSchedule(deps: ApiDeps, req: SendRequest, now: number): void {
  const ahead = deps.config.limits.max_schedule_ahead;
  if (req.scheduledAt !== undefined && req.scheduledAt > now + ahead)
    throw new ApiError('validation_failed', `scheduled_at is more than ${formatDuration(ahead)} ahead.`, {
      scheduled_at: [`must be at most ${formatDuration(ahead)} from now (limits.max_schedule_ahead)`],
    });
}

/**
 * The MIME message is composed when it is first delivered; here only its size matters. Two
 * cheap bounds settle it unless the message is near the limit; only then is it composed
 * (streamed and counted, not kept) for the exact size.
 */
async function checkEncodedSize(limit: number, req: SendRequest, messageId: string, now: number): Promise<void> {
  if (encodedSizeBound(req) <= limit) return;
  const floor = encodedSizeFloor(req);
  if (floor > limit)
    throw new ApiError('payload_too_large', `The encoded message is at least ${floor} bytes; the limit is ${limit}.`);
  const size = await composedSize(req, messageId, now).catch(refuseUnsendable);
  if (size > limit)
    throw new ApiError('payload_too_large', `The encoded message is ${size} bytes; the limit is ${limit}.`);
}

/** The id of a Message-ID the request gave in `headers`, bare (domain/message-search.ts). */
function headerMessageIdOf(req: SendRequest): { headerMessageId?: string } {
  const own = req.headers.find(([key]) => key.toLowerCase() === 'message-id');
  const id = own ? messageIdOfField(own[1]) : undefined;
  return id !== undefined ? { headerMessageId: id } : {};
}

/** What the request says of the message, for the accept input (send/admit.ts). */
function contentOf(req: SendRequest, stored: string | Uint8Array, now: number): SendContent {
  return {
    // A Message-ID the request gave is the message's: it finds the message too.
    ...headerMessageIdOf(req),
    fromHeader: formatMailbox(req.from),
    subject: req.subject,
    metadata: req.metadata,
    request: stored,
    recipients: recipientsOf(req).map(({ field, mailbox }) => ({
      address: mailbox.address,
      domain: mailbox.domain,
      field,
    })),
    // A time already past sends at once.
    ...(req.scheduledAt !== undefined && req.scheduledAt > now ? { scheduledAt: req.scheduledAt } : {}),
    ...(req.tags.length ? { tags: req.tags } : {}),
    ...(req.unsubscribe ? { unsubscribe: true } : {}),
  };
}

function sendRoute(app: FastifyInstance, deps: ApiDeps, gate: SendGate): void {
  app.post(SEND_ROUTE, needs('send'), async (request, reply) => {
    const key = requireKey(request);
    // No Content-Type and no body: fastify calls no parser at all.
    if (request.body === undefined)
      throw new ApiError('invalid_json', 'The request body is empty; send a JSON object.');
    const idemHeader = idempotencyKey(request.headers['idempotency-key']);
    const stored = request.rawText ?? request.rawBody!;
    const authEpoch = gate.epoch;
    const input = await prepare(deps, gate, key, request.body, stored, deps.clock.now());
    const result = await gate.accept({
      ...input,
      ...(idemHeader !== undefined
        ? { idempotency: { key: idemHeader, hash: request.bodyHash!, ttlMs: deps.send.current.idempotencyTtl } }
        : {}),
      authEpoch,
    });
    // Only now, after the COMMIT has returned, does the client hear "accepted".
    if (result.kind !== 'accepted') return answerShared(reply, result);
    deps.onAccepted?.();
    return reply.code(202).send(acceptedResponse(input));
  });
}

function batchRoute(app: FastifyInstance, deps: ApiDeps, gate: SendGate): void {
  app.post(BATCH_ROUTE, needs('send'), async (request, reply) => {
    const key = requireKey(request);
    const items = batchItems(request.body);
    const idemHeader = idempotencyKey(request.headers['idempotency-key']);
    const authEpoch = gate.epoch;
    const now = deps.clock.now();
    // Each item on its own: a bad one gets its error, the others go on.
    const prepared = await Promise.all(
      items.map((item) =>
        prepare(deps, gate, key, item, JSON.stringify(item), now).then(
          (input) => input,
          (e: unknown) => {
            if (e instanceof ApiError) return e;
            throw e;
          },
        ),
      ),
    );
    const result = await gate.acceptBatch({
      items: prepared.map((p) => (p instanceof ApiError ? { error: p.toBody().error } : p)),
      customerId: key.customer_id,
      apiKeyId: key.id,
      ...(idemHeader !== undefined
        ? { idempotency: { key: idemHeader, hash: request.bodyHash!, ttlMs: deps.send.current.idempotencyTtl } }
        : {}),
      authEpoch,
      now,
    });
    if (result.kind === 'replay') return answerShared(reply, { ...result, response: batchBody(result.response) });
    if (result.kind !== 'accepted') return answerShared(reply, result);
    if (result.response.data.some((r) => 'message_id' in r)) deps.onAccepted?.();
    return reply.code(202).send(batchBody(result.response));
  });
}

/**
 * A batch's answer as the client hears it, fresh or replayed: each item the commit refused said as
 * its error (domain/errors.ts, refusal), the others as kept. An answer kept before the store kept
 * refusals as values (each item its body already) is sent as it was kept.
 */
export function batchBody(response: unknown): unknown {
  const data = (response as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return response;
  return {
    ...(response as object),
    data: data.map((item: BatchItemResult) =>
      item !== null && typeof item === 'object' && 'refused' in item
        ? refusal(item.refused, item.domain).toBody()
        : item,
    ),
  };
}

/** A batch body: an array of 1 to MAX_BATCH items. */
function batchItems(body: unknown): unknown[] {
  if (body === undefined)
    throw new ApiError('invalid_json', 'The request body is empty; send a JSON array of up to 100 messages.');
  if (!Array.isArray(body)) throw new ApiError('invalid_json', 'The request body must be a JSON array of messages.');
  if (body.length === 0 || body.length > MAX_BATCH)
    throw new ApiError('validation_failed', `A batch has 1 to ${MAX_BATCH} messages; this one has ${body.length}.`, {
      body: [`must hold 1 to ${MAX_BATCH} messages`],
    });
  return body;
}

function listRoute(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/api/v1/emails',
    needs('emails:read'),
    async (request) => {
      const key = requireKey(request);
      const page = parsePage(request.query);
      const filters = parseMessageFilters(request.query);
      if (filters instanceof Problems) throw validationError(filters);
      const rows = await deps.store.messages.search({
        ...filters,
        customerId: key.customer_id,
        limit: page.limit + 1,
        ...(page.after !== undefined ? { before: page.after } : {}),
      });
      const data = rows.slice(0, page.limit);
      return {
        data: data.map(({ customer: _c, ...m }) => m),
        next: rows.length > page.limit ? String(data[data.length - 1]!.email_id) : null,
      };
    },
  );
}

function getRoute(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { message_id: string } }>('/api/v1/emails/:message_id', needs('emails:read'), async (request) => {
    const key = requireKey(request);
    const view = await deps.store.messages.get(key.customer_id, request.params.message_id);
    if (!view) throw new ApiError('not_found', 'No such message.');
    return view;
  });
}

/** What a single send and a batch answer alike: an Idempotency-Key's first response or its conflict (a key revoked meanwhile is the SendGate's 401). */
function answerShared(
  reply: FastifyReply,
  result: { kind: 'replay'; status: number; response: unknown } | { kind: 'conflict' },
): FastifyReply {
  if (result.kind === 'conflict')
    throw new ApiError('conflict', 'This Idempotency-Key was used with a different request body.');
  return reply.code(result.status).header('idempotent-replayed', 'true').send(result.response);
}

/** The Idempotency-Key header, checked; undefined when absent. */
function idempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header !== undefined && (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)))
    throw new ApiError('validation_failed', 'The Idempotency-Key header is invalid.', {
      'Idempotency-Key': ['must be 1 to 255 printable ASCII characters'],
    });
  return header;
}

/** A composed message that breaks a rule validation missed is refused, not accepted to fail later. */
function refuseUnsendable(e: unknown): never {
  if (e instanceof UnsendableMessage)
    throw new ApiError('validation_failed', `The message cannot be sent: ${e.message}.`);
  throw e;
}
