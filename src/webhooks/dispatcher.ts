import type { Db } from '../store/db.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { claimDeliveries, disableEndpoint, eventBySeq, fanOut, getEndpoint, logAttempt, settleDelivery, type ClaimedDelivery } from '../store/webhooks.js';
import { WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_MS, ok2xx, type WebhookService } from './service.js';

export interface DispatcherDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  service: WebhookService;
  worker: string;
  concurrency: number;
  perEndpoint: number;
  pollInterval: number;
}

/**
 * Delivers the outbox: fans events out to subscribed endpoints, claims due deliveries (at most
 * `perEndpoint` in flight per endpoint, so one slow or dead endpoint cannot hold up the others),
 * POSTs them, and records every attempt with the next retry or the final state.
 */
export class Dispatcher {
  private inFlight = new Set<Promise<void>>();
  private perEndpoint = new Map<string, number>();
  private wake: (() => void) | null = null;
  private stopped = false;

  constructor(private readonly deps: DispatcherDeps) {}

  kick(): void {
    this.wake?.();
  }

  async run(signal: AbortSignal): Promise<void> {
    signal.addEventListener('abort', () => this.kick(), { once: true });
    while (!signal.aborted) {
      try {
        this.fill();
      } catch (e) {
        this.deps.log.error({ err: e }, 'webhooks: claim failed; retrying');
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.deps.pollInterval);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
    this.stopped = true;
    await Promise.all(this.inFlight);
  }

  /** Delivers everything due now and waits for it (tests, with a manual clock). */
  async drain(): Promise<void> {
    for (;;) {
      const started = this.fill();
      if (started === 0 && this.inFlight.size === 0) return;
      if (this.inFlight.size > 0) await Promise.race(this.inFlight);
    }
  }

  private fill(): number {
    if (this.stopped) return 0;
    const { db, clock, concurrency, perEndpoint, worker } = this.deps;
    fanOut(db, clock.now());
    const room = concurrency - this.inFlight.size;
    if (room <= 0) return 0;
    const claimed = claimDeliveries(db, worker, clock.now(), room, this.perEndpoint, perEndpoint);
    for (const d of claimed) this.start(d);
    return claimed.length;
  }

  private start(d: ClaimedDelivery): void {
    this.perEndpoint.set(d.endpointId, (this.perEndpoint.get(d.endpointId) ?? 0) + 1);
    const p = this.attempt(d)
      .catch((e: unknown) => {
        this.deps.log.error({ err: e, delivery: d.id }, 'webhook attempt failed unexpectedly; retrying later');
        settleDelivery(this.deps.db, d.id, 'pending', d.attempts, this.deps.clock.now() + WEBHOOK_RETRY_MS[0]!, this.deps.clock.now());
      })
      .finally(() => {
        this.perEndpoint.set(d.endpointId, (this.perEndpoint.get(d.endpointId) ?? 1) - 1);
        this.inFlight.delete(p);
        this.kick();
      });
    this.inFlight.add(p);
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const { db, clock, service, log } = this.deps;
    const endpoint = getEndpoint(db, d.endpointId);
    const event = eventBySeq(db, d.eventSeq);
    if (!endpoint || !event || !endpoint.enabled) {
      settleDelivery(db, d.id, 'failed', d.attempts, null, clock.now());
      return;
    }
    const at = clock.now();
    const r = await service.send(endpoint, event.id, event.body);
    const attempt = d.attempts + 1;
    const now = clock.now();
    db.tx(() => {
      logAttempt(db, { endpointId: endpoint.id, deliveryId: d.id, eventId: event.id, eventType: event.type, attempt, at, status: r.status, error: r.error, durationMs: r.durationMs, response: r.response });
      if (ok2xx(r)) settleDelivery(db, d.id, 'succeeded', attempt, null, now);
      else if (r.status === 410) {
        // Standard Webhooks: 410 Gone means the receiver wants no more; disable the endpoint.
        disableEndpoint(db, endpoint.id, '410 Gone');
        settleDelivery(db, d.id, 'failed', attempt, null, now);
      } else if (attempt >= WEBHOOK_MAX_ATTEMPTS) settleDelivery(db, d.id, 'failed', attempt, null, now);
      else settleDelivery(db, d.id, 'pending', attempt, now + WEBHOOK_RETRY_MS[attempt - 1]!, now);
    });
    log.info({ endpoint: endpoint.id, event_id: event.id, type: event.type, attempt, status: r.status, error: r.error, ms: r.durationMs }, 'webhook attempt');
  }
}
