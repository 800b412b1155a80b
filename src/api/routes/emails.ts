import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { requireKey, unauthorized } from '../auth.js';
import { ApiError, Problems, UnsendableMessage } from '../../domain/errors.js';
import { validateSendRequest, recipientsOf, type SendRequest } from '../../domain/send-request.js';
import { formatMailbox } from '../../domain/addresses.js';
import { composedSize, encodedSizeBound, encodedSizeFloor } from '../../outbound/compose.js';
import { acceptedResponse, getMessage, searchMessages } from '../../store/messages.js';
import { parseMessageFilters } from '../../domain/message-search.js';
import { parsePage } from '../paging.js';
import { timeSortableId, BASE32 } from '../../lib/ids.js';
import { movable } from '../../store/group-commit.js';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
export const SEND_ROUTE = '/api/v1/emails';

function unknownDomain(name: string): ApiError {
  const p = new Problems();
  p.add('from', `${name} is not a domain of this account; add it with "posthaste domains add"`);
  return validationError(p);
}

function unverifiedDomain(name: string): ApiError {
  return new ApiError('domain_not_verified', `The sender domain ${name} is not verified yet; publish its DNS records and run "posthaste domains verify".`, {
    from: [`${name} is not verified`],
  });
}

export function emailRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { db, commit, config, clock } = deps;

  app.post(SEND_ROUTE, async (request, reply) => {
    const key = requireKey(request);
    // No Content-Type and no body: fastify calls no parser at all.
    if (request.body === undefined) throw new ApiError('invalid_json', 'The request body is empty; send a JSON object.');
    const body = request.body as Record<string, unknown>;

    const idemHeader = request.headers['idempotency-key'];
    if (idemHeader !== undefined && (typeof idemHeader !== 'string' || !IDEMPOTENCY_KEY.test(idemHeader)))
      throw new ApiError('validation_failed', 'The Idempotency-Key header is invalid.', {
        'Idempotency-Key': ['must be 1 to 255 printable ASCII characters'],
      });

    const parsed = validateSendRequest(body, { maxRecipients: config.limits.max_recipients });
    if (parsed instanceof Problems) throw validationError(parsed);
    const req: SendRequest = parsed;

    // The sender domain must be one of this customer's, and verified. The epoch is taken before
    // the lookups: the writer re-verifies both if anything changed since (AuthCache).
    const authEpoch = deps.auth.epoch;
    let domain = deps.auth.domain(req.from.domain, false);
    const usable = (d: typeof domain) => d !== undefined && d.customer_id === key.customer_id && d.verified_at !== null;
    if (!usable(domain)) domain = deps.auth.domain(req.from.domain, true); // a refusal is never from a stale cache
    if (!domain || domain.customer_id !== key.customer_id) throw unknownDomain(req.from.domain);
    if (domain.verified_at === null) throw unverifiedDomain(domain.name);

    const now = clock.now();
    const messageId = `${timeSortableId(now, BASE32)}@${domain.name}`;
    // The MIME message is composed when it is first delivered; here only its size matters. Two
    // cheap bounds settle it unless the message is near the limit; only then is it composed
    // (streamed and counted, not kept) for the exact size.
    const limit = config.limits.max_message_bytes;
    if (encodedSizeBound(req) > limit) {
      const floor = encodedSizeFloor(req);
      if (floor > limit) throw new ApiError('payload_too_large', `The encoded message is at least ${floor} bytes; the limit is ${limit}.`);
      const size = await composedSize(req, messageId, now).catch(refuseUnsendable);
      if (size > limit) throw new ApiError('payload_too_large', `The encoded message is ${size} bytes; the limit is ${limit}.`);
    }

    const recipients = recipientsOf(req).map(({ field, mailbox }) => ({ address: mailbox.address, domain: mailbox.domain, field }));
    const sandbox = key.kind === 'sandbox';
    const stored = request.rawText ?? request.rawBody!;
    const result = await commit.submit(
      'accept',
      {
        customerId: key.customer_id,
        apiKeyId: key.id,
        sandbox,
        messageId,
        fromHeader: formatMailbox(req.from),
        senderDomain: domain.name,
        subject: req.subject,
        metadata: req.metadata,
        request: stored,
        recipients,
        ...(idemHeader !== undefined ? { idempotency: { key: idemHeader, hash: request.bodyHash!, ttlMs: config.limits.idempotency_ttl } } : {}),
        authEpoch,
        now,
      },
      movable(stored),
    );
    deps.auth.observe(result.authEpoch);
    // Only now, after the COMMIT has returned, does the client hear "accepted".
    switch (result.kind) {
      case 'accepted':
        deps.onAccepted?.();
        return reply.code(202).send(acceptedResponse({ messageId, sandbox, recipients }));
      case 'replay':
        return reply.code(result.status).header('idempotent-replayed', 'true').send(result.response);
      case 'conflict':
        throw new ApiError('conflict', 'This Idempotency-Key was used with a different request body.');
      case 'key_revoked':
        throw unauthorized();
      case 'domain_unknown':
        throw unknownDomain(domain.name);
      case 'domain_unverified':
        throw unverifiedDomain(domain.name);
      case 'suppressed': {
        const p = new Problems();
        for (const s of result.addresses) p.add(s.field, `${s.address} is on the suppression list (${s.reason})`);
        throw new ApiError('recipient_suppressed', `${result.addresses.length} recipient(s) are on the suppression list; nothing was queued.`, p.details);
      }
    }
  });

  app.get<{ Querystring: Record<string, string | undefined> }>('/api/v1/emails', async (request) => {
    const key = requireKey(request);
    const page = parsePage(request.query);
    const filters = parseMessageFilters(request.query);
    if (filters instanceof Problems) throw validationError(filters);
    const rows = searchMessages(db, { ...filters, customerId: key.customer_id, limit: page.limit + 1, ...(page.after !== undefined ? { before: page.after } : {}) });
    const data = rows.slice(0, page.limit);
    return {
      data: data.map(({ customer: _c, ...m }) => m),
      next: rows.length > page.limit ? String(data[data.length - 1]!.email_id) : null,
    };
  });

  app.get<{ Params: { message_id: string } }>('/api/v1/emails/:message_id', async (request) => {
    const key = requireKey(request);
    const view = getMessage(db, key.customer_id, request.params.message_id);
    if (!view) throw new ApiError('not_found', 'No such message.');
    return view;
  });
}

/** A composed message that breaks a rule validation missed is refused, not accepted to fail later. */
function refuseUnsendable(e: unknown): never {
  if (e instanceof UnsendableMessage) throw new ApiError('validation_failed', `The message cannot be sent: ${e.message}.`);
  throw e;
}

function validationError(p: Problems): ApiError {
  const first = Object.entries(p.details)[0]!;
  const message =
    p.count === 1 ? `${first[0]} ${first[1][0]}` : `The request has ${p.count} problems; ${p.omitted > 0 ? `details lists the first ${Problems.MAX_PROBLEMS}` : 'see details'}.`;
  return new ApiError('validation_failed', message, p.details);
}
