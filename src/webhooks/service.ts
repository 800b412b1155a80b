import type { Resolver } from 'node:dns/promises';
import { Problems } from '../domain/errors.js';
import { EVENT_TYPES, type EventType } from '../domain/events.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import { eventId as newEventId } from '../lib/ids.js';
import { VERSION } from '../lib/version.js';
import type { AttemptRecord, Endpoint } from '../store/model.js';
import type { WebhookStore } from '../store/store.js';
import { checkTarget, type PostResult, resolvesPublicOnly, type SafeFetch } from './safe-fetch.js';
import { sampleData } from './samples.js';
import { newSecret, signWebhook } from './sign.js';

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
  ) {}

  /** One signed POST of an event body exactly as stored (same webhook-id on every retry and replay). */
  send(endpoint: Endpoint, eventId: string, body: string): Promise<PostResult> {
    const ts = Math.floor(this.clock.now() / 1000);
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
      signWebhook(endpoint.secret, eventId, ts, body),
    ];
    return this.fetch.post(endpoint.url, headers, Buffer.from(body, 'utf8'));
  }

  /** Validates `{url, events?, description?}`: every problem at once, under its field. */
  async validate(
    body: Record<string, unknown>,
  ): Promise<{ url: string; events: EventType[] | null; description: string } | Problems> {
    const p = new Problems();
    for (const k of Object.keys(body))
      if (!['url', 'events', 'description'].includes(k)) p.add(k, 'is not a known field');
    let url = '';
    if (typeof body.url !== 'string' || body.url.length === 0) p.add('url', 'is required');
    else if (body.url.length > 2048) p.add('url', 'must be at most 2048 characters');
    else {
      try {
        const u = checkTarget(body.url, this.allowPrivate);
        url = u.toString();
        if (!this.allowPrivate) {
          const problem = await resolvesPublicOnly(this.resolver, u.hostname);
          if (problem) p.add('url', problem);
        }
      } catch (e) {
        p.add('url', (e as Error).message);
      }
    }
    let events: EventType[] | null = null;
    if (body.events !== undefined && body.events !== null) {
      if (!Array.isArray(body.events) || body.events.length === 0)
        p.add('events', 'must be a non-empty array of event types');
      else {
        const bad = body.events.filter((e) => !(EVENT_TYPES as readonly unknown[]).includes(e));
        if (bad.length)
          p.add('events', `unknown event types: ${bad.map(String).join(', ')} (known: ${EVENT_TYPES.join(', ')})`);
        else events = [...new Set(body.events as EventType[])];
      }
    }
    let description = '';
    if (body.description !== undefined && body.description !== null) {
      if (typeof body.description !== 'string' || body.description.length > 500)
        p.add('description', 'must be a string of at most 500 characters');
      else description = body.description;
    }
    return p.empty ? { url, events, description } : p;
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
