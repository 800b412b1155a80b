/** The store's model for webhooks: endpoints, the fan-out's order, deliveries and their attempts. */

export interface Endpoint {
  id: string;
  customerId: number;
  url: string;
  events: string[] | null;
  description: string;
  secret: string;
  /** The secret a rotation replaced, still signing beside `secret` until previousSecretExpiresAt (docs/api.md). */
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
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
  /** What sent it: the dispatcher delivering an event, a replay, or a test event. */
  kind: AttemptKind;
}

export type AttemptKind = 'event' | 'replay' | 'test';

/** An attempt's kind from its delivery row's `kind` (null: no delivery row, which only a test event lacks). */
export function attemptKind(deliveryKind: string | null): AttemptKind {
  if (deliveryKind === null) return 'test';
  return deliveryKind === 'replay' ? 'replay' : 'event';
}

/** One webhook delivery of a message's event: how far it got, its last attempt's answer, and when the next is due. */
export interface MessageHookDelivery {
  event_id: string;
  type: string;
  endpoint_id: string;
  state: string;
  attempts: number;
  updated_at: number;
  /** When the next attempt is due; null once settled. */
  next_attempt_at: number | null;
  /** The last attempt's HTTP status, or why there was none (`last_error`); both null before the first. */
  last_status: number | null;
  last_error: string | null;
}

/**
 * The query of a message's webhook deliveries, the same on both engines ($1: the message's row
 * id): each event delivery with its last attempt, found through the endpoint's log newest first.
 */
export const DELIVERIES_OF_MESSAGE = `SELECT e.id AS event_id, e.type, d.endpoint_id, d.state, d.attempts, d.updated_at,
    CASE WHEN d.state = 'pending' THEN d.next_attempt_at END AS next_attempt_at, la.status AS last_status, la.error AS last_error
  FROM events e JOIN webhook_deliveries d ON d.event_seq = e.seq AND d.kind = 'event'
  LEFT JOIN webhook_attempts la ON la.id = (
    SELECT a.id FROM webhook_attempts a WHERE a.endpoint_id = d.endpoint_id AND a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1)
  WHERE e.message_id = $1 ORDER BY e.seq, d.endpoint_id`;
