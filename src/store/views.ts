import type { EventEnvelope } from '../domain/events.js';
import type { MessageView, NodeView, RecipientState } from './model.js';

/**
 * Rows as both engines read them, made into the views the API, CLI and dashboard show: one
 * function each, so the engines cannot disagree on how a row reads.
 */

/** A message's row (messages), as its view needs it. */
export interface MessageRow {
  id: number;
  message_id: string;
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
}

/** The columns of MessageRow, for a SELECT. */
export const MESSAGE_VIEW_COLUMNS = 'id, message_id, from_header, subject, sandbox, metadata, size, created_at, scheduled_at, tags';

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
      next_attempt_at: r.next_attempt_at !== null && (r.state === 'queued' || r.state === 'deferred') ? new Date(r.next_attempt_at).toISOString() : null,
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
