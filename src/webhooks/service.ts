import type { Resolver } from 'node:dns/promises';
import { Problems } from '../domain/errors.js';
import { EVENT_TYPES, type EventType } from '../domain/events.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import { eventId as newEventId } from '../lib/ids.js';
import { VERSION } from '../lib/version.js';
import type { AttemptRecord, Endpoint } from '../store/model.js';
import type { EndpointChanges, WebhookStore } from '../store/store.js';
import { checkTarget, type PostResult, resolvesPublicOnly, type SafeFetch } from './safe-fetch.js';
import { sampleData } from './samples.js';
import { newSecret, type Secrets, signatureHeader } from './sign.js';

/** Standard Webhooks retry delays after each failure (seed: 5 s … 10 h, 8 attempts, about 28 h). */
export const WEBHOOK_RETRY_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
export const WEBHOOK_MAX_ATTEMPTS = WEBHOOK_RETRY_MS.length + 1;

/** One POST of a test or a replay as the API and the CLI show it (snake_case, as everywhere in the API). */
export interface AttemptOutcome {
  success: boolean;
  status: number | null;
  error: string | null;
  duration_ms: number;
  response: string | null;
  event_id: string;
  type: string;
}

const USER_AGENT = `posthaste/${VERSION}`;

export const ok2xx = (r: PostResult) => r.status !== null && r.status >= 200 && r.status < 300;

function outcomeOf(r: PostResult, event: { id: string; type: string }): AttemptOutcome {
  return {
    success: ok2xx(r),
    status: r.status,
    error: r.error,
    duration_ms: r.durationMs,
    response: r.response,
    event_id: event.id,
    type: event.type,
  };
}

/** The attempt log's record of one POST of `event` (a test, a replay, or the dispatcher's). */
export function attemptRecord(
  endpointId: string,
  deliveryId: number | null,
  event: { id: string; type: string },
  attempt: number,
  at: number,
  r: PostResult,
): AttemptRecord {
  return {
    endpointId,
    deliveryId,
    eventId: event.id,
    eventType: event.type,
    attempt,
    at,
    status: r.status,
    error: r.error,
    durationMs: r.durationMs,
    response: r.response,
  };
}

/** Everything about sending webhooks that the API, the CLI and the dispatcher share. */
export class WebhookService {
  constructor(
    readonly store: WebhookStore,
    readonly clock: Clock,
    readonly fetch: SafeFetch,
    private readonly resolver: Resolver,
    readonly allowPrivate: boolean,
    /** webhooks.secret_grace: how long a rotated-out secret goes on signing beside the new one. */
    readonly secretGraceMs = DEFAULT_SECRET_GRACE_MS,
  ) {}

  /**
   * Secrets rotated through this process, by endpoint: an endpoint the dispatcher read before the
   * rotation is signed with them from the rotation's commit on (other nodes see it at their next read).
   */
  private readonly rotated = new Map<string, Secrets>();

  /** The newest secrets known for an endpoint: a later rotation ends its grace period later. */
  private secretsOf(endpoint: Endpoint, now: number): Secrets {
    const r = this.rotated.get(endpoint.id);
    if (!r) return endpoint;
    if ((r.previousSecretExpiresAt ?? 0) <= now) this.rotated.delete(endpoint.id);
    return (r.previousSecretExpiresAt ?? 0) > (endpoint.previousSecretExpiresAt ?? 0) ? r : endpoint;
  }

  /** One signed POST of an event body exactly as stored (same webhook-id on every retry and replay). */
  send(endpoint: Endpoint, eventId: string, body: string): Promise<PostResult> {
    const now = this.clock.now();
    const ts = Math.floor(now / 1000);
    const headers = [
      'content-type',
      'application/json',
      'user-agent',
      USER_AGENT,
      'webhook-id',
      eventId,
      'webhook-timestamp',
      String(ts),
      'webhook-signature',
      signatureHeader(this.secretsOf(endpoint, now), eventId, ts, body, now),
    ];
    return this.fetch.post(endpoint.url, headers, Buffer.from(body, 'utf8'));
  }

  /** Validates `{url, events?, description?}`: every problem at once, under its field. */
  async validate(
    body: Record<string, unknown>,
  ): Promise<{ url: string; events: EventType[] | null; description: string } | Problems> {
    const p = unknownFields(body, ['url', 'events', 'description']);
    const url = await this.checkUrl(p, body.url);
    const events = checkEvents(p, body.events);
    const description = checkDescription(p, body.description);
    return p.empty ? { url, events, description } : p;
  }

  /**
   * Validates an update, `{url?, events?, description?, enabled?}`, each field as `validate` checks
   * it (events null: every type); at least one is required.
   */
  async validateChanges(body: Record<string, unknown>): Promise<EndpointChanges | Problems> {
    const p = unknownFields(body, ['url', 'events', 'description', 'enabled']);
    const changes: EndpointChanges = {};
    if (body.url !== undefined) changes.url = await this.checkUrl(p, body.url);
    if (body.events !== undefined) changes.events = checkEvents(p, body.events);
    if (body.description !== undefined) changes.description = checkDescription(p, body.description);
    if (body.enabled !== undefined) {
      if (typeof body.enabled !== 'boolean') p.add('enabled', 'must be true or false');
      else changes.enabled = body.enabled ? { on: true } : { on: false, reason: 'disabled by its owner' };
    }
    if (p.empty && Object.keys(body).length === 0)
      p.add('body', 'must change at least one of url, events, description, enabled');
    return p.empty ? changes : p;
  }

  /** A URL as a webhook target: http(s), a public address unless webhooks.allow_private_targets. */
  private async checkUrl(p: Problems, value: unknown): Promise<string> {
    if (typeof value !== 'string' || value.length === 0) p.add('url', 'is required');
    else if (value.length > 2048) p.add('url', 'must be at most 2048 characters');
    else {
      try {
        const u = checkTarget(value, this.allowPrivate);
        if (!this.allowPrivate) {
          const problem = await resolvesPublicOnly(this.resolver, u.hostname);
          if (problem) p.add('url', problem);
        }
        return u.toString();
      } catch (e) {
        p.add('url', (e as Error).message);
      }
    }
    return '';
  }

  /** An endpoint's new secret, shown once; the old one signs beside it for secretGraceMs. */
  async rotateSecret(e: Endpoint): Promise<Endpoint | undefined> {
    const until = this.clock.now() + this.secretGraceMs;
    const rotated = await this.store.rotateSecret(e.id, newSecret(), until);
    if (rotated) this.rotated.set(e.id, rotated);
    return rotated;
  }

  create(
    customerId: number,
    input: { url: string; events: EventType[] | null; description: string },
  ): Promise<Endpoint> {
    return this.store.createEndpoint({ customerId, ...input, secret: newSecret(), now: this.clock.now() });
  }

  /** Sends a sample event of `type` to one endpoint now, logs the attempt, and reports it. */
  async test(endpoint: Endpoint, type: EventType): Promise<AttemptOutcome> {
    const now = this.clock.now();
    const id = newEventId(now);
    const body = JSON.stringify({ id, type, timestamp: isoTime(now), data: sampleData(type, now) });
    const r = await this.send(endpoint, id, body);
    await this.store.logAttempt(attemptRecord(endpoint.id, null, { id, type }, 1, now, r));
    return outcomeOf(r, { id, type });
  }

  /** Sends a past event again with the same webhook-id; logged as a replay delivery, not retried. */
  async replay(
    endpoint: Endpoint,
    event: { seq: number; id: string; type: string; body: string },
  ): Promise<AttemptOutcome> {
    const now = this.clock.now();
    const deliveryId = await this.store.startReplay(endpoint.id, event.seq, now);
    const r = await this.send(endpoint, event.id, event.body);
    await this.store.finishReplay(
      attemptRecord(endpoint.id, deliveryId, event, 1, now, r),
      deliveryId,
      ok2xx(r) ? 'succeeded' : 'failed',
      this.clock.now(),
    );
    return outcomeOf(r, event);
  }
}

/** How long a rotated-out secret signs beside the new one when webhooks.secret_grace is not set. */
export const DEFAULT_SECRET_GRACE_MS = 24 * 3_600_000;

/** A Problems with each field of `body` not among `known` named. */
function unknownFields(body: Record<string, unknown>, known: string[]): Problems {
  const p = new Problems();
  for (const k of Object.keys(body)) if (!known.includes(k)) p.add(k, 'is not a known field');
  return p;
}

/** Event types to subscribe to: a non-empty array of known types; null or absent: every type. */
function checkEvents(p: Problems, value: unknown): EventType[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.length === 0) p.add('events', 'must be a non-empty array of event types');
  else {
    const bad = value.filter((e) => !(EVENT_TYPES as readonly unknown[]).includes(e));
    if (bad.length)
      p.add('events', `unknown event types: ${bad.map(String).join(', ')} (known: ${EVENT_TYPES.join(', ')})`);
    else return [...new Set(value as EventType[])];
  }
  return null;
}

function checkDescription(p: Problems, value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string' || value.length > 500)
    p.add('description', 'must be a string of at most 500 characters');
  else return value;
  return '';
}

/** An endpoint after its secret was rotated: the new secret (shown this once) and until when the old one still signs. */
export function rotationView(e: Endpoint): Record<string, unknown> {
  return {
    ...endpointView(e, true),
    previous_secret_expires_at: e.previousSecretExpiresAt === null ? null : isoTime(e.previousSecretExpiresAt),
  };
}

/** The endpoint as the API shows it (the secret only at creation). */
export function endpointView(e: Endpoint, withSecret = false): Record<string, unknown> {
  return {
    id: e.id,
    url: e.url,
    events: e.events ?? [...EVENT_TYPES],
    description: e.description,
    ...(withSecret ? { secret: e.secret } : {}),
    enabled: e.enabled,
    ...(e.disabledReason ? { disabled_reason: e.disabledReason } : {}),
    created_at: isoTime(e.createdAt),
  };
}
