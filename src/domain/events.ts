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
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface EventEnvelope<D = Record<string, unknown>> {
  id: string;
  type: EventType;
  timestamp: string;
  data: D;
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
