/** Event types and envelopes (docs/api.md, Webhook endpoints). */
export const EVENT_TYPES = [
  'email.delivered',
  'email.deferred',
  'email.bounced',
  'email.complained',
  'recipient.suppressed',
  'recipient.unsubscribed',
  'email.received',
  'inbound.limited',
  'customer.warning',
  'customer.paused',
  'customer.resumed',
  'domain.verified',
  'domain.verification_failed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface EventEnvelope<D = Record<string, unknown>> {
  id: string;
  type: EventType;
  timestamp: string;
  data: D;
}

/**
 * The data of `domain.verified` (the domain became verified) and `domain.verification_failed` (a
 * verified domain's records were found absent or wrong: it is no longer verified).
 */
export interface DomainEventData {
  domain: string;
  /** When it was first verified (domain.verified), null once it is not (domain.verification_failed). */
  verified_at: string | null;
  /** The records verification requires, as the lookup found them (empty when an administrator forced it). */
  records: Array<{ purpose: string; name: string; found: boolean }>;
}

/** The fields every message event's data carries. */
export interface MessageEventBase {
  email_id: number;
  message_id: string;
  /** The id in the message's Message-ID field, bare: the sender's own when it wrote one, else message_id. */
  header_message_id: string;
  from: string;
  subject: string;
  recipient: string;
  sandbox: boolean;
  timestamp: string;
  metadata: Record<string, string>;
  /** The message's tags, as sent (empty when it had none). */
  tags: string[];
}
