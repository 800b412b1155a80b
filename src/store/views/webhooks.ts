import { type AttemptView, attemptKind, type Endpoint, type StoredDelivery } from '../model.js';
import type { EndpointChanges } from '../webhook-store.js';

/**
 * Webhooks' rows as both engines read and write them (views.ts): an endpoint's columns encoded
 * and decoded (`events` a JSON array or null for every type, `enabled` 1 or 0), an update merged,
 * a claimed delivery, an attempt in the delivery log.
 */

/** A row of webhook_endpoints. */
export interface EndpointRow {
  id: string;
  customer_id: number;
  url: string;
  /** JSON array of event types; null: every type. */
  events: string | null;
  description: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  enabled: number;
  disabled_reason: string | null;
  created_at: number;
}

export function endpointView(r: EndpointRow): Endpoint {
  return {
    id: r.id,
    customerId: r.customer_id,
    url: r.url,
    events: r.events ? (JSON.parse(r.events) as string[]) : null,
    description: r.description,
    secret: r.secret,
    previousSecret: r.previous_secret,
    previousSecretExpiresAt: r.previous_secret_expires_at === null ? null : Number(r.previous_secret_expires_at),
    enabled: r.enabled === 1,
    disabledReason: r.disabled_reason,
    createdAt: r.created_at,
  };
}

/** An event-type list as the `events` column keeps it: a JSON array, or null for every type. */
export function eventsColumn(events: string[] | null): string | null {
  return events ? JSON.stringify(events) : null;
}

/** An endpoint written back whole: the values of `SET url, events, description, enabled, disabled_reason`, in that order. */
export function endpointColumns(e: Endpoint): [string, string | null, string, number, string | null] {
  return [e.url, eventsColumn(e.events), e.description, e.enabled ? 1 : 0, e.disabledReason];
}

/** An endpoint with an update's changes applied, as both engines write it back whole. */
export function mergeEndpoint(e: Endpoint, c: EndpointChanges): Endpoint {
  const enabled = c.enabled === undefined ? e.enabled : c.enabled.on;
  const disabledReason =
    c.enabled === undefined ? e.disabledReason : c.enabled.on ? null : e.enabled ? c.enabled.reason : e.disabledReason;
  return {
    ...e,
    url: c.url ?? e.url,
    events: c.events === undefined ? e.events : c.events,
    description: c.description ?? e.description,
    enabled,
    disabledReason,
  };
}

/** An attempt's row (webhook_attempts with its delivery's state and kind), as the delivery log reads it. */
export type AttemptRow = Omit<AttemptView, 'at' | 'kind'> & { id: number; at: number; delivery_kind: string | null };

/** An attempt in the delivery log, with its row id as the page's cursor. */
export function attemptView({ id, at, delivery_kind, ...r }: AttemptRow): AttemptView & { cursor: number } {
  return { cursor: id, ...r, at: new Date(at).toISOString(), kind: attemptKind(delivery_kind) };
}

/** A claimed delivery's row (webhook_deliveries joined with its event). */
export interface ClaimedDeliveryRow {
  id: number;
  endpoint_id: string;
  event_seq: number;
  attempts: number;
  event_id: string;
  event_type: string;
  event_body: string;
}

/** A claimed delivery as the dispatcher holds it. */
export function storedDeliveryView(d: ClaimedDeliveryRow): StoredDelivery {
  return {
    kind: 'stored',
    id: d.id,
    endpointId: d.endpoint_id,
    eventSeq: d.event_seq,
    attempts: d.attempts,
    event: { id: d.event_id, type: d.event_type, body: d.event_body },
  };
}
