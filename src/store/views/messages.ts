import { type AcceptInput, type MessageSummary, storedHeaderMessageId } from '../model.js';

/**
 * Messages' rows as both engines write and read them (views.ts): an accepted send's columns, and a
 * message's row in a list made into its summary.
 */

/**
 * An accepted send's columns as both engines insert them: flags 1 or 0, the metadata a JSON
 * object, the tags a JSON array or null when there are none, and the recipients' first attempt at
 * the scheduled time or now.
 */
export interface AcceptedColumns {
  sandbox: number;
  metadata: string;
  requestFormat: string;
  scheduledAt: number | null;
  tags: string | null;
  headerMessageId: string | null;
  pool: string | null;
  unsubscribe: number;
  /** The recipients' next_attempt_at. */
  firstAttemptAt: number;
}

export function acceptedColumns(x: Omit<AcceptInput, 'idempotency'>): AcceptedColumns {
  return {
    sandbox: x.sandbox ? 1 : 0,
    metadata: JSON.stringify(x.metadata),
    requestFormat: x.requestFormat ?? 'json',
    scheduledAt: x.scheduledAt ?? null,
    tags: x.tags?.length ? JSON.stringify(x.tags) : null,
    headerMessageId: storedHeaderMessageId(x),
    pool: x.pool ?? null,
    unsubscribe: x.unsubscribe ? 1 : 0,
    firstAttemptAt: x.scheduledAt ?? x.now,
  };
}

/** A message's row in a list (messages joined with its customer's name). */
export interface MessageSummaryRow {
  id: number;
  message_id: string;
  header_message_id: string | null;
  customer: string;
  from_header: string;
  subject: string;
  sandbox: number;
  created_at: number;
}

/** A message in a list, with its recipients counted by state (as each engine's JSON aggregate gives them). */
export function messageSummaryView(r: MessageSummaryRow, states: Record<string, number>): MessageSummary {
  return {
    email_id: r.id,
    message_id: r.message_id,
    header_message_id: r.header_message_id ?? r.message_id,
    customer: r.customer,
    from: r.from_header,
    subject: r.subject,
    sandbox: r.sandbox === 1,
    created_at: new Date(r.created_at).toISOString(),
    states,
  };
}
