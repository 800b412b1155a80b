import { addressKey } from '../../domain/addresses.js';
import type { Refusal } from '../../domain/errors.js';
import type { EventEnvelope } from '../../domain/events.js';
import type { MessageFilters } from '../../domain/message-search.js';
import type { QuotaExceeded, QuotaLimits } from '../../domain/quotas.js';

/** The store's model for messages: a send as accepted, its 202 body, and the views of messages the API and dashboard show. */

/** A recipient's state (recipients.state; migration 008 added canceled). */
export type RecipientState = 'queued' | 'deferred' | 'delivered' | 'bounced' | 'complained' | 'suppressed' | 'canceled';

/**
 * What a message's stored request is: `json`, the send request's body as the API received it
 * (delivery composes the MIME message from it); `mime`, a message submitted over SMTP as the
 * client wrote it, with the headers the listener added or removed at acceptance (delivery signs
 * it as it is: docs/submission.md).
 */
export type RequestFormat = 'json' | 'mime';

export interface AcceptInput {
  customerId: number;
  /** The key it was sent with; null for the server's own mail (TLS reports: docs/delivery.md). */
  apiKeyId: string | null;
  sandbox: boolean;
  messageId: string;
  /**
   * The id in the message's Message-ID field, bare, when the sender wrote its own (a submitted
   * message's field, or the API's `headers`); absent: the field carries messageId.
   */
  headerMessageId?: string;
  fromHeader: string;
  senderDomain: string;
  subject: string;
  metadata: Record<string, string>;
  /**
   * The request body as received, stored as a BLOB (its UTF-8 bytes when given as text); delivery
   * reads it back without judging it again (domain/stored-request.ts) and composes the MIME message
   * from it. The API passes the text it parsed
   * when the body is small (a string crosses to the writer thread as a copy of its characters,
   * where a small Buffer, a slice of Node's shared 8 KiB pool, would copy the whole pool), and the
   * bytes when it is large, moved to the writer thread rather than copied (group-commit.ts).
   */
  request: Uint8Array | string;
  /** What `request` is; `json` when absent. A `mime` message's size is stored with it at acceptance. */
  requestFormat?: RequestFormat;
  recipients: Array<{ address: string; domain: string; field: 'to' | 'cc' | 'bcc' }>;
  /** Held until then: the recipients' first attempt is due at this time (ms). */
  scheduledAt?: number;
  tags?: string[];
  /** The send asked for the List-Unsubscribe fields (docs/delivery.md, "One-click unsubscribe"). */
  unsubscribe?: boolean;
  /**
   * The pool of source addresses the sender chose for this message (its name, checked by the
   * caller against the customer's allowed pools); absent: the customer's default pool, else the
   * configured default (docs/delivery.md, "Sending identities").
   */
  pool?: string;
  idempotency?: { key: string; hash: Buffer; ttlMs: number };
  /**
   * The server's default send quotas for this key's kind (domain/quotas.ts): a production key's
   * customer's own quotas replace them, a sandbox key's are these. Absent: none.
   */
  quotas?: QuotaLimits;
  now: number;
}

/** What a message row keeps of headerMessageId: NULL when it is posthaste's own id (or absent). */
export function storedHeaderMessageId(input: Pick<AcceptInput, 'messageId' | 'headerMessageId'>): string | null {
  return input.headerMessageId !== undefined && input.headerMessageId !== input.messageId
    ? input.headerMessageId
    : null;
}

export interface AcceptedResponse {
  message_id: string;
  /** scheduled: held until scheduled_at. */
  status: 'queued' | 'scheduled';
  scheduled_at?: string;
  sandbox: boolean;
  recipients: string[];
}

/** The 202 body for an accepted message (and what an idempotent replay answers). */
export function acceptedResponse(
  input: Pick<AcceptInput, 'messageId' | 'sandbox' | 'recipients' | 'scheduledAt'>,
): AcceptedResponse {
  const recipients = input.recipients.map((r) => r.address);
  if (input.scheduledAt === undefined)
    return { message_id: input.messageId, status: 'queued', sandbox: input.sandbox, recipients };
  return {
    message_id: input.messageId,
    status: 'scheduled',
    scheduled_at: new Date(input.scheduledAt).toISOString(),
    sandbox: input.sandbox,
    recipients,
  };
}

export type AcceptResult =
  /** The 202 body is acceptedResponse(input): built where it is sent, not carried back from the writer thread. */
  | { kind: 'accepted'; emailId: number }
  | { kind: 'replay'; status: number; response: unknown }
  | { kind: 'conflict' }
  | { kind: 'suppressed'; addresses: Array<{ address: string; field: string; reason: string }> }
  | { kind: 'rate_limited'; quota: QuotaExceeded };

/**
 * A send refused because some of its recipients are on the customer's suppression list: those
 * recipients, in the send's order, each with the reason its entry (or its domain's) gives, found
 * by addressKey. Both engines answer so, before any quota is taken.
 */
export function suppressedRefusal(
  recipients: ReadonlyArray<{ address: string; field: string }>,
  reasonOf: (key: string) => string | undefined,
): Extract<AcceptResult, { kind: 'suppressed' }> {
  const addresses = recipients.flatMap((r) => {
    const reason = reasonOf(addressKey(r.address));
    return reason ? [{ address: r.address, field: r.field, reason }] : [];
  });
  return { kind: 'suppressed', addresses };
}

/** An Idempotency-Key's record as stored (idempotency_keys): the request's hash, and its first answer. */
export interface IdempotencyRecord {
  request_hash: Uint8Array;
  status: number;
  /** The first answer's body, as JSON. */
  response: string;
  created_at: number;
}

/** What a request with an Idempotency-Key already used is answered: its first answer again, or a conflict. */
export type IdempotentAnswer = { kind: 'replay'; status: number; response: unknown } | { kind: 'conflict' };

/**
 * What an Idempotency-Key's record says of a request, one rule for both engines, which only read,
 * remove and write the record: within its time to live, the first answer again (`replay`) when
 * the body is the same and `conflict` when it differs; past it, `expired` (the engine removes the
 * record in the request's transaction and the request goes on as a new one); no record, undefined.
 */
export function idempotencyVerdict(
  prior: IdempotencyRecord | undefined,
  idem: { hash: Uint8Array; ttlMs: number },
  now: number,
): IdempotentAnswer | 'expired' | undefined {
  if (!prior) return undefined;
  if (prior.created_at <= now - idem.ttlMs) return 'expired';
  if (Buffer.compare(prior.request_hash, idem.hash) !== 0) return { kind: 'conflict' };
  return { kind: 'replay', status: prior.status, response: JSON.parse(prior.response) };
}

/** The record an accepted request leaves under its Idempotency-Key: its 202 and the body it was answered. */
export function idempotencyRecord(response: unknown): { status: number; response: string } {
  return { status: 202, response: JSON.stringify(response) };
}

export interface RecipientView {
  address: string;
  field: string;
  state: RecipientState;
  attempts: number;
  next_attempt_at: string | null;
  last_response: unknown;
}

export interface MessageView {
  email_id: number;
  message_id: string;
  /** The id in the message's Message-ID field, bare: the sender's own, else message_id. */
  header_message_id: string;
  from: string;
  subject: string;
  sandbox: boolean;
  metadata: Record<string, string>;
  /** Bytes of the composed message; null until it is first composed for delivery (a message submitted over SMTP has its size from acceptance). */
  size: number | null;
  created_at: string;
  /** When it is held until (a scheduled send); null: sent at once. */
  scheduled_at: string | null;
  tags: string[];
  recipients: RecipientView[];
  events: EventEnvelope[];
}

/** A message's content as stored: the request body as accepted, and the composed MIME message while it is kept. */
export interface StoredContent {
  /** The send request's body as received (or the submitted MIME message); null once retention removed it (store/sqlite/retention.ts, store/pg/retention.ts). */
  request: Buffer | null;
  format: RequestFormat;
  /**
   * The composed MIME message (unsigned), kept only while a recipient of it may still be sent to
   * (store/sqlite/queue.ts keepComposed, dropComposedIfDone; store/pg/delivery.ts); null before the first attempt and once
   * every recipient is done.
   */
  composed: Buffer | null;
}

export interface MessageSummary {
  email_id: number;
  message_id: string;
  /** As in MessageView. */
  header_message_id: string;
  customer: string;
  from: string;
  subject: string;
  sandbox: boolean;
  created_at: string;
  /** Recipient count per state, e.g. {delivered: 2, deferred: 1}. */
  states: Record<string, number>;
}

/**
 * recipient: an address, exactly as sent or in lower case; messageId with or without angle
 * brackets; state: at least one recipient in it; since/until: accepted at or after / before (ms).
 */
export interface MessageSearch extends MessageFilters {
  customerId: number;
  /** Cursor: only messages with a smaller email_id. */
  before?: number;
  limit: number;
}

// units of work that take more than a row: plain data, since on SQLite they cross to the writer
// thread (store/sqlite/writer/) and on PostgreSQL they become one transaction's parameters

export interface SendInput extends AcceptInput {
  /** auth_epoch the API's cached key and domain were at least as new as. */
  authEpoch: string;
}
export type SendCommit = (
  | AcceptResult
  | { kind: 'key_revoked' }
  | { kind: 'domain_unknown' }
  | { kind: 'domain_unverified' }
  | { kind: 'customer_paused'; reason?: string | null }
) & {
  /** auth_epoch as this transaction saw it: the API drops its cache when it moved. */
  authEpoch: string;
};

/** A batch item the API refused before the commit: its error, as the API said it (kept as given). */
export interface BatchItemError {
  error: { code: string; message: string; details: Record<string, string[]> };
}
/** A batch item: ready to store, or the error it already got (validation, its domain). */
export type BatchItem = Omit<AcceptInput, 'idempotency'> | BatchItemError;
/**
 * A batch item the commit refused: why, as a value (domain/errors.ts, Refusal), and the sender
 * domain its message named; the API says it as its error (api/routes/emails.ts, batchBody).
 */
export interface BatchItemRefused {
  refused: Refusal;
  domain: string;
}
/** What a batch item came to, as the batch's answer keeps it: its 202 body, the API's error, or the commit's refusal. */
export type BatchItemResult = AcceptedResponse | BatchItemError | BatchItemRefused;

/** What the commit made of one ready batch item: accepted, or refused (what else a send can get never comes to an item). */
export type BatchItemCommit = AcceptResult | Refusal | { kind: 'key_revoked' };

/**
 * A batch's answer, one rule for both engines: in the items' order, an item the API refused keeps
 * its error; one the commit accepted gets its 202 body; one it refused, its refusal as a value.
 * `commit` is called in order, once per ready item (SQLite stores each as it goes; PostgreSQL
 * answers from its one statement).
 */
export function batchAnswer(
  items: BatchItem[],
  commit: (item: Omit<AcceptInput, 'idempotency'>) => BatchItemCommit,
): { data: BatchItemResult[] } {
  return {
    data: items.map((item): BatchItemResult => {
      if ('error' in item) return item;
      const r = commit(item);
      switch (r.kind) {
        case 'accepted':
          return acceptedResponse(item);
        case 'replay':
        case 'conflict':
        case 'key_revoked':
          throw new Error(`a batch item cannot be answered ${r.kind}`);
        default:
          return { refused: r, domain: item.senderDomain };
      }
    }),
  };
}

export interface BatchInput {
  items: BatchItem[];
  customerId: number;
  apiKeyId: string;
  /** For the whole batch: a retry gets the first response, items and all. */
  idempotency?: { key: string; hash: Buffer; ttlMs: number };
  authEpoch: string;
  now: number;
}
export type BatchResult = (
  | { kind: 'accepted'; response: { data: BatchItemResult[] } }
  | { kind: 'replay'; status: number; response: unknown }
  | { kind: 'conflict' }
  | { kind: 'key_revoked' }
) & {
  authEpoch: string;
};
