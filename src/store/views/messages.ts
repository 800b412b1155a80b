import { type AcceptInput, storedHeaderMessageId } from '../model.js';

/**
 * An accepted send's columns as both engines insert them (views.ts): flags 1 or 0, the metadata a
 * JSON object, the tags a JSON array or null when there are none, and the recipients' first attempt
 * at the scheduled time or now.
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
