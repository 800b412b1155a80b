import { CLUSTER_THROTTLE, type DestinationThrottle } from '../domain/destinations.js';
import type { EventEnvelope } from '../domain/events.js';
import type { Reply } from '../domain/outcome.js';
import type {
  Claimed,
  CustomerPools,
  MessageView,
  NodeView,
  QueuedMessage,
  ReceivingDomain,
  RecipientState,
  RequestFormat,
  Session,
  SimulatedSuppression,
  Status,
  SuppressionReason,
  User,
} from './model.js';

/**
 * Rows as both engines read them, made into the views the API, CLI and dashboard show: one
 * function each, so the engines cannot disagree on how a row reads.
 */

export * from './views/dmarc.js';
export * from './views/inbound.js';
export * from './views/messages.js';
export * from './views/webhooks.js';

/** A message's row (messages), as its view needs it. */
export interface MessageRow {
  id: number;
  message_id: string;
  header_message_id: string | null;
  from_header: string;
  subject: string;
  sandbox: number;
  /** JSON object of strings. */
  metadata: string;
  size: number | null;
  created_at: number;
  scheduled_at: number | null;
  /** JSON array of strings; null: none. */
  tags: string | null;
  /** 1: the send asked for the List-Unsubscribe fields. */
  unsubscribe: number;
}

/** The columns of MessageRow, for a SELECT. */
export const MESSAGE_VIEW_COLUMNS =
  'id, message_id, header_message_id, from_header, subject, sandbox, metadata, size, created_at, scheduled_at, tags';

/** A recipient's row, as a message's view shows it. */
export interface RecipientRow {
  address: string;
  field: 'to' | 'cc' | 'bcc';
  state: RecipientState;
  attempts: number;
  next_attempt_at: number | null;
  /** JSON: the last reply (or why it was suppressed). */
  last_response: string | null;
}

/** The columns of RecipientRow, for a SELECT. */
export const RECIPIENT_VIEW_COLUMNS = 'address, field, state, attempts, next_attempt_at, last_response';

export function messageView(m: MessageRow, recipients: RecipientRow[], events: EventEnvelope[]): MessageView {
  return {
    email_id: m.id,
    message_id: m.message_id,
    header_message_id: m.header_message_id ?? m.message_id,
    from: m.from_header,
    subject: m.subject,
    sandbox: m.sandbox === 1,
    metadata: JSON.parse(m.metadata) as Record<string, string>,
    size: m.size,
    created_at: new Date(m.created_at).toISOString(),
    scheduled_at: m.scheduled_at !== null ? new Date(m.scheduled_at).toISOString() : null,
    tags: m.tags ? (JSON.parse(m.tags) as string[]) : [],
    recipients: recipients.map((r) => ({
      address: r.address,
      field: r.field,
      state: r.state,
      attempts: r.attempts,
      next_attempt_at:
        r.next_attempt_at !== null && (r.state === 'queued' || r.state === 'deferred')
          ? new Date(r.next_attempt_at).toISOString()
          : null,
      last_response: r.last_response ? (JSON.parse(r.last_response) as unknown) : null,
    })),
    events,
  };
}

/** A live node's row as both engines read it (times in ms), with the claims it holds. */
export interface NodeRow {
  id: string;
  name: string;
  pid: number;
  lease_ms: number;
  started_at: number;
  heartbeat_at: number;
  recipients: number;
  webhooks: number;
}

export function nodeView(r: NodeRow): NodeView {
  return {
    id: r.id,
    name: r.name,
    pid: r.pid,
    lease_ms: r.lease_ms,
    started_at: new Date(r.started_at).toISOString(),
    heartbeat_at: new Date(r.heartbeat_at).toISOString(),
    claims: { recipients: r.recipients, webhook_deliveries: r.webhooks },
  };
}

/** A customer's pools as both engines keep them: allowed_pools a JSON array. */
export interface CustomerPoolsRow {
  id: number;
  default_pool: string | null;
  allowed_pools: string;
}

export function customerPoolsView(r: Omit<CustomerPoolsRow, 'id'>): CustomerPools {
  return { default_pool: r.default_pool, allowed_pools: JSON.parse(r.allowed_pools) as string[] };
}

/** The customers' pools by id, from their rows. */
export function customerPoolsMap(rows: CustomerPoolsRow[]): Map<number, CustomerPools> {
  return new Map(rows.map((r) => [r.id, customerPoolsView(r)]));
}

/** A claimed recipient's row, as a claim reads it. */
export interface ClaimedRow {
  id: number;
  message_id: number;
  address: string;
  domain: string;
  attempts: number;
  /** Read on PostgreSQL with the claim; on SQLite for a retried recipient only (the due index does not cover it). */
  source_ip?: string | null;
}

export function claimedView(r: ClaimedRow): Claimed {
  return {
    id: r.id,
    messageRowId: r.message_id,
    address: r.address,
    domain: r.domain,
    attempts: r.attempts,
    sourceIp: r.source_ip ?? null,
  };
}

/** A message's row as delivery reads it (QUEUED_MESSAGE_COLUMNS). */
export interface QueuedMessageRow {
  id: number;
  customer_id: number;
  message_id: string;
  header_message_id: string | null;
  sandbox: number;
  from_header: string;
  sender_domain: string;
  subject: string;
  /** JSON object of strings. */
  metadata: string;
  request: Buffer;
  request_format: RequestFormat;
  raw: Buffer | null;
  created_at: number;
  /** JSON array of strings; null: none. */
  tags: string | null;
  /** 1: the send asked for the List-Unsubscribe fields. */
  unsubscribe: number;
  pool: string | null;
}

/** The columns of QueuedMessageRow, for a SELECT. */
export const QUEUED_MESSAGE_COLUMNS =
  'id, customer_id, message_id, header_message_id, sandbox, from_header, sender_domain, subject, metadata, request, request_format, raw, created_at, tags, unsubscribe, pool';

export function queuedMessage(m: QueuedMessageRow): QueuedMessage {
  return {
    id: m.id,
    customerId: m.customer_id,
    messageId: m.message_id,
    headerMessageId: m.header_message_id,
    sandbox: m.sandbox === 1,
    fromHeader: m.from_header,
    senderDomain: m.sender_domain,
    subject: m.subject,
    metadata: JSON.parse(m.metadata) as Record<string, string>,
    request: m.request,
    requestFormat: m.request_format,
    raw: m.raw,
    createdAt: m.created_at,
    tags: m.tags ? (JSON.parse(m.tags) as string[]) : [],
    unsubscribe: m.unsubscribe === 1,
    pool: m.pool,
  };
}

/** A destination's throttling row (destination_throttles); `holder` where the engine keeps one per node. */
export interface ThrottleRow {
  destination: string;
  holder?: string;
  connections: number;
  strikes: number;
  paused_until: number;
  reason: string;
  since: number;
}

/** The columns of ThrottleRow but the holder, for a SELECT. */
export const THROTTLE_COLUMNS = 'destination, connections, strikes, paused_until, reason, since';

export function throttleView(r: ThrottleRow): DestinationThrottle {
  return {
    destination: r.destination,
    connections: r.connections,
    strikes: r.strikes,
    pausedUntil: r.paused_until,
    reason: JSON.parse(r.reason) as Reply,
    since: r.since,
    ...(r.holder !== undefined && r.holder !== CLUSTER_THROTTLE ? { node: r.holder } : {}),
  };
}

/** A throttled destination as `posthaste status` shows it. */
export function throttleStatus(d: DestinationThrottle): Status['throttled'][number] {
  return {
    destination: d.destination,
    ...(d.node !== undefined ? { node: d.node } : {}),
    connections: d.connections,
    refusals: d.strikes,
    paused_until: new Date(d.pausedUntil).toISOString(),
    since: new Date(d.since).toISOString(),
    reason: { code: d.reason.code, enhanced_code: d.reason.enhanced_code, message: d.reason.message },
  };
}

/** A session's row joined with its user, as both engines read it (`shown`: the customer shown). */
export type SessionRow = User & { csrf: string; shown: number; last_seen_at: number };

export function sessionView(r: SessionRow): Session {
  return {
    user: { id: r.id, email: r.email, role: r.role, customer_id: r.customer_id, created_at: r.created_at },
    csrf: r.csrf,
    customerId: r.shown,
  };
}

/** A sandbox message's simulated suppression, from its `recipient.suppressed` event's row: the reason is the event's. */
export function simulatedSuppressionView(r: {
  address: string;
  message_id: string;
  created_at: number;
  body: string;
}): SimulatedSuppression {
  return {
    address: r.address,
    message_id: r.message_id,
    created_at: r.created_at,
    reason: (JSON.parse(r.body) as { data: { reason: SuppressionReason } }).data.reason,
  };
}

/** A receiving domain's row, with its own inbound limits (null: the server's default). */
export interface ReceivingDomainRow {
  id: number;
  customer_id: number;
  name: string;
  inbound_rate_per_minute: number | null;
  inbound_monthly_limit: number | null;
}

/** The columns of ReceivingDomainRow, for a SELECT. */
export const RECEIVING_DOMAIN_COLUMNS = 'id, customer_id, name, inbound_rate_per_minute, inbound_monthly_limit';

export function receivingDomainView(r: ReceivingDomainRow): ReceivingDomain {
  return {
    id: r.id,
    customerId: r.customer_id,
    name: r.name,
    ratePerMinute: r.inbound_rate_per_minute,
    monthlyLimit: r.inbound_monthly_limit,
  };
}
