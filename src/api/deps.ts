import type { Config } from '../config/schema.js';
import type { Live, SendSettings } from '../config/settings.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { MemoryBudget } from '../lib/memory-budget.js';
import type { Metrics } from '../lib/metrics.js';
import type { AuthCache } from '../store/auth-cache.js';
import type { Store } from '../store/store.js';
import type { WebhookService } from '../webhooks/service.js';

/** Everything the HTTP API needs, passed in by the composition root (or a test). */
export interface ApiDeps {
  store: Store;
  auth: AuthCache;
  webhooks: WebhookService;
  metrics?: Metrics;
  /** limits.message_memory, shared with the inbound listener: large request bodies wait for room in it. */
  budget: MemoryBudget;
  config: Config;
  /** What a reload can change for the send endpoints (limits.max_recipients, limits.idempotency_ttl). */
  send: Live<SendSettings>;
  clock: Clock;
  log: Logger;
  lifecycle: Lifecycle;
  /** Called after a message is committed, so delivery can start without waiting for a poll. */
  onAccepted?: () => void;
}

export interface Lifecycle {
  /** True once SIGTERM arrived: new requests get 503. */
  shuttingDown: boolean;
  /** Whether every listener the daemon runs is up (for /healthz). */
  listenersUp(): boolean;
}
