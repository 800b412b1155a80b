/**
 * The store's model: the rows and views it reads and writes, and the few pure rules about them
 * (the 202 body, the order of fan-out positions, which endpoints an event goes to), shared by both
 * engines and by everything above the store, which imports them from here and the interface
 * from store.ts.
 */
import type { MessageFilters } from '../domain/message-search.js';
import type { DestinationThrottle } from '../domain/destinations.js';
import type { Report, ReportEnvelope } from '../domain/report.js';
import type { EventEnvelope } from '../domain/events.js';

export type { DestinationThrottle };

// customers

/** A row of customers. */
export interface Customer {
  id: number;
  name: string;
  created_at: number;
}

export const DEFAULT_CUSTOMER = 'default';

/** A customer's name: 1-63 letters, digits, "_", "." or "-", starting with a letter or digit. */
export const CUSTOMER_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/i;

// keys

export type KeyKind = 'production' | 'sandbox';

/** A row of api_keys without its hash (the hash never leaves the store). */
export interface ApiKeyInfo {
  id: string;
  customer_id: number;
  name: string;
  kind: KeyKind;
  created_at: number;
  revoked_at: number | null;
  /** When a message was last sent with it. */
  last_used_at?: number | null;
}

// domains

/** A row of domains (the columns' meaning: migrations 001, 003 and 007). */
export interface DomainRow {
  id: number;
  customer_id: number;
  name: string;
  verified_at: number | null;
  /** 1 while the inbound listener accepts mail for it. */
  receiving: number;
  verification_token: string;
  dkim_selector: string;
  dkim_private_key: string;
  dkim_public_key: string;
  /** A key made by rotate-dkim, waiting for its record to be found in DNS; null: none. */
  next_dkim_selector: string | null;
  next_dkim_private_key: string | null;
  next_dkim_public_key: string | null;
  /** The selector signed with before the last switch, and when the switch was. */
  previous_dkim_selector: string | null;
  previous_dkim_public_key: string | null;
  dkim_switched_at: number | null;
  /** The domain's own inbound limits; null: the server's. */
  inbound_rate_per_minute: number | null;
  inbound_monthly_limit: number | null;
  created_at: number;
}

export const DKIM_SELECTOR = 'posthaste';

export type SendingDomain = Pick<DomainRow, 'id' | 'customer_id' | 'name' | 'verified_at'>;

// suppressions

export type SuppressionReason = 'hard_bounce' | 'spam_complaint' | 'manual';

export interface SuppressionRow {
  address: string;
  reason: SuppressionReason;
  message_id: string | null;
  created_at: number;
}

/** A suppression a sandbox key's simulator fired: recipient.suppressed, with the real list untouched. */
export interface SimulatedSuppression {
  address: string;
  reason: SuppressionReason;
  message_id: string;
  created_at: number;
}

// messages

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
  apiKeyId: string;
  sandbox: boolean;
  messageId: string;
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
  idempotency?: { key: string; hash: Buffer; ttlMs: number };
  now: number;
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
export function acceptedResponse(input: Pick<AcceptInput, 'messageId' | 'sandbox' | 'recipients' | 'scheduledAt'>): AcceptedResponse {
  const recipients = input.recipients.map((r) => r.address);
  if (input.scheduledAt === undefined) return { message_id: input.messageId, status: 'queued', sandbox: input.sandbox, recipients };
  return { message_id: input.messageId, status: 'scheduled', scheduled_at: new Date(input.scheduledAt).toISOString(), sandbox: input.sandbox, recipients };
}

export type AcceptResult =
  /** The 202 body is acceptedResponse(input): built where it is sent, not carried back from the writer thread. */
  | { kind: 'accepted'; emailId: number }
  | { kind: 'replay'; status: number; response: unknown }
  | { kind: 'conflict' }
  | { kind: 'suppressed'; addresses: Array<{ address: string; field: string; reason: string }> };

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
  /** The send request's body as received (or the submitted MIME message); null once retention removed it (store/sqlite/retention.ts, store/pg/admin.ts). */
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

// queue

/** A claimed recipient with what delivery needs. */
export interface Claimed {
  id: number;
  messageRowId: number;
  address: string;
  domain: string;
  attempts: number;
}

export interface QueuedMessage {
  id: number;
  customerId: number;
  messageId: string;
  sandbox: boolean;
  fromHeader: string;
  senderDomain: string;
  subject: string;
  metadata: Record<string, string>;
  request: Buffer;
  /** `mime`: request is the message itself, signed as it is; `json`: the send request, composed at the first attempt. */
  requestFormat: RequestFormat;
  raw: Buffer | null;
  createdAt: number;
  tags: string[];
}

// inbound

export interface ReceivingDomain {
  id: number;
  customerId: number;
  name: string;
  ratePerMinute: number | null;
  monthlyLimit: number | null;
}

export type LimitCheck = { ok: true } | { ok: false; limit: 'rate' | 'monthly'; windowEndsAt: number };

export interface StoredInbound {
  customerId: number;
  domainId: number;
  mailFrom: string;
  rcptTo: string[];
  remoteIp: string;
  helo: string;
  raw: Buffer;
  fromHeader: string;
  to: string[];
  subject: string;
  messageId: string;
  attachments: number;
  auth: { spf: string; dkim: string; dmarc: string };
}

export interface InboundRow {
  id: string;
  customer_id: number;
  mail_from: string;
  rcpt_to: string;
  remote_ip: string;
  helo: string;
  raw: Buffer;
  size: number;
  from_header: string;
  subject: string;
  message_id: string;
  attachments: number;
  auth: string;
  created_at: number;
}

// webhooks

export interface Endpoint {
  id: string;
  customerId: number;
  url: string;
  events: string[] | null;
  description: string;
  secret: string;
  enabled: boolean;
  disabledReason: string | null;
  createdAt: number;
}

/** How many deliveries the claimer may take now, per endpoint; `take` counts one taken. */
export interface ClaimRoom {
  room(endpointId: string): number;
  take(endpointId: string): void;
}

/**
 * A place in the order the fan-out reads events in. On SQLite, one writer at a time: seq order is
 * commit order (`x` is 0). On PostgreSQL transactions commit in another order than they take
 * sequence numbers, so events are read by the transaction that wrote them (`x`, its id), then seq,
 * and only from transactions older than every one still running (store/pg/webhooks.ts).
 */
export interface FanOutPos {
  x: number;
  seq: number;
}

export const comparePos = (a: FanOutPos, b: FanOutPos): number => a.x - b.x || a.seq - b.seq;

export interface OutboxEvent {
  pos: FanOutPos;
  seq: number;
  id: string;
  customerId: number;
  type: string;
  body: string;
  createdAt: number;
}

/** Whether an endpoint gets an event: it subscribes to the type and existed when the event was written. */
export function subscribes(endpoint: Endpoint, event: { type: string; createdAt: number }): boolean {
  return endpoint.createdAt <= event.createdAt && (!endpoint.events || endpoint.events.includes(event.type));
}

export interface DeliveryOf {
  endpointId: string;
  eventSeq: number;
  /** The event as stored (loaded with the claim or the fan-out). */
  event: { id: string; type: string; body: string };
}

/** A delivery with its row in the store, claimed (locked) by this worker: a retry, or one parked pending. */
export interface StoredDelivery extends DeliveryOf {
  kind: 'stored';
  id: number;
  attempts: number;
}

/** A delivery fanned out in memory: no row yet; it gets one with its first attempt's record (or as a pending row). */
export interface FreshDelivery extends DeliveryOf {
  kind: 'fresh';
}

/** What the webhook dispatcher holds and attempts. */
export type ClaimedDelivery = StoredDelivery | FreshDelivery;

export interface AttemptRecord {
  endpointId: string;
  deliveryId: number | null;
  eventId: string;
  eventType: string;
  attempt: number;
  at: number;
  status: number | null;
  error: string | null;
  durationMs: number;
  response: string | null;
}

/** A finished attempt and what it decided: the delivery's next state, and whether the endpoint is now disabled (410). */
export interface SettledAttempt {
  attempt: AttemptRecord;
  /** Null: fanned out in memory; its row is created here. */
  deliveryId: number | null;
  eventSeq: number;
  state: 'succeeded' | 'failed' | 'pending';
  nextAt: number | null;
  disableEndpoint: boolean;
}

/** What the dispatcher commits at once (through the group-commit writer in the daemon). */
export interface AttemptBatch {
  batch: SettledAttempt[];
  /** Deliveries fanned out in memory that go to the store pending, due now (their endpoint had no room). */
  pending: Array<{ endpointId: string; eventSeq: number }>;
  /** The fan-out cursor, once every event up to it has its rows with this batch; null: unchanged. */
  cursor: FanOutPos | null;
  now: number;
  /**
   * The fan-out's lease epoch (webhooks/fanout.ts) when the dispatcher leads it: the batch's
   * fan-out writes (rows of fresh deliveries, pending rows, the cursor) are made only while this
   * epoch holds the lease, and refused otherwise (0: the dispatcher does not lead). Absent: a
   * single writer (tests, tools), unconditionally.
   */
  epoch?: number;
}

export interface AttemptView {
  event_id: string;
  event_type: string;
  attempt: number;
  at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  response: string | null;
  delivery_state: string | null;
}

// users

export type Role = 'admin' | 'customer';

export interface User {
  id: number;
  email: string;
  role: Role;
  /** The customer a customer's user belongs to; null for an admin. */
  customer_id: number | null;
  created_at: number;
}

export interface Session {
  user: User;
  csrf: string;
  /** The customer shown. */
  customerId: number;
}

// overview

export const ACTIVITY_KINDS = ['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const;

export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

export interface Overview {
  /** Totals over the last 24 hours and 7 days, by kind (recipients accepted; outcome events). */
  last24h: Record<ActivityKind, number>;
  last7d: Record<ActivityKind, number>;
  /** One entry per hour, oldest first, for the last 7 days (168 entries). */
  hourly: Array<{ hour: number } & Record<ActivityKind, number>>;
  queue: { queued: number; deferred: number };
  oldestDeferredAt: number | null;
  /** Webhook deliveries waiting for their next attempt (those in flight are not counted). */
  webhookBacklog: number;
  /** Destinations the server is slowing down because they refused it (the server's, not the customer's: one row per receiver). */
  throttled: DestinationThrottle[];
}

// status

/** A daemon on the store, as it registers itself (docs/cluster.md). */
export interface NodeInfo {
  /** Fresh at every start; the worker its claims carry. */
  id: string;
  /** server.node_name. */
  name: string;
  pid: number;
  /** Silent longer than this, the node is dead (cluster.lease). */
  leaseMs: number;
}

/** A live node as status and the dashboard show it: times by the store's clock, and the claims it holds. */
export interface NodeView {
  id: string;
  name: string;
  pid: number;
  lease_ms: number;
  started_at: string;
  heartbeat_at: string;
  claims: { recipients: number; webhook_deliveries: number };
}

/** What releasing dead nodes' claims freed. */
export interface Released {
  recipients: number;
  webhook_deliveries: number;
  /** Ids of the dead nodes whose rows were removed. */
  nodes: string[];
}

export interface Status {
  /** The live nodes (one on SQLite). */
  nodes: NodeView[];
  queue: Record<string, number>;
  oldest_deferred: string | null;
  next_attempt: string | null;
  webhooks: Record<string, number>;
  inbound: { last_24h: number; total: number; reports_unmatched: number };
  messages: number;
  /** Destinations slowed down because they refused us (adaptive backoff), with the refusal. */
  /** `node`: the node whose own throttling it is (limits per node, on PostgreSQL); absent: one for all. */
  throttled: Array<{
    destination: string;
    node?: string;
    connections: number;
    refusals: number;
    paused_until: string;
    since: string;
    reason: { code: number; enhanced_code: string; message: string };
  }>;
}

// units of work that take more than a row: plain data, since on SQLite they cross to the writer
// thread (store/sqlite/writer/) and on PostgreSQL they become one transaction's parameters

/** One inbound transaction: messages for receiving domains, and the report it is, for each of posthaste's addresses it came to. */
export interface ReceiveInput {
  /** The messages to store; their bytes are `raw`, sent once for all of them. */
  stores: Array<Omit<StoredInbound, 'raw'>>;
  /** What the message says as a report (read once), when it came to a return path or the feedback address. */
  report: Report | null;
  reports: ReportEnvelope[];
  raw: Uint8Array;
  secret: Uint8Array;
  now: number;
}

export interface SendInput extends AcceptInput {
  /** auth_epoch the API's cached key and domain were at least as new as. */
  authEpoch: string;
}
export type SendCommit = (AcceptResult | { kind: 'key_revoked' } | { kind: 'domain_unknown' } | { kind: 'domain_unverified' }) & {
  /** auth_epoch as this transaction saw it: the API drops its cache when it moved. */
  authEpoch: string;
};

/** A batch item: ready to store, or the error it already got (validation, its domain). */
export type BatchItem = Omit<AcceptInput, 'idempotency'> | { error: { code: string; message: string; details: Record<string, string[]> } };
export type BatchItemResult = AcceptedResponse | { error: { code: string; message: string; details: Record<string, string[]> } };

export interface BatchInput {
  items: BatchItem[];
  customerId: number;
  apiKeyId: string;
  /** For the whole batch: a retry gets the first response, items and all. */
  idempotency?: { key: string; hash: Buffer; ttlMs: number };
  authEpoch: string;
  now: number;
}
export type BatchResult = ({ kind: 'accepted'; response: { data: BatchItemResult[] } } | { kind: 'replay'; status: number; response: unknown } | { kind: 'conflict' } | { kind: 'key_revoked' }) & {
  authEpoch: string;
};
