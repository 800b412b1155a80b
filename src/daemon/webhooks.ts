import type { Resolver } from 'node:dns/promises';
import type { ClusterNode } from '../cluster/node.js';
import type { Metrics } from '../lib/metrics.js';
import type { Store } from '../store/store.js';
import { createWebhookService } from '../webhooks/create.js';
import { Dispatcher } from '../webhooks/dispatcher.js';
import type { WebhookService } from '../webhooks/service.js';
import type { Ctx } from './context.js';

/**
 * The webhook fan-out's lease: a node that stops renewing it (dead, paused, cut off from the
 * database) is replaced by another within this long; renewed every third of it.
 */
const FANOUT_LEASE_MS = 15_000;

/** Step: the webhook service (endpoints, signing, sending) and the dispatcher that delivers events with it. */
export function buildWebhooks(
  { config, log, clock }: Ctx,
  store: Store,
  resolver: Resolver,
  node: ClusterNode,
  metrics: Metrics,
): { webhooks: WebhookService; dispatcher: Dispatcher } {
  const webhooks = createWebhookService(store.webhooks, config, clock, resolver);
  const dispatcher = new Dispatcher({
    store: store.webhooks,
    clock,
    log,
    service: webhooks,
    worker: node.id,
    canClaim: () => node.canClaim(),
    // Several nodes on one PostgreSQL fan new events out one at a time (webhooks/fanout.ts).
    fanOutLease: { holder: node.id, ttlMs: FANOUT_LEASE_MS },
    concurrency: config.webhooks.concurrency,
    perEndpoint: config.webhooks.concurrency_per_endpoint,
    pollInterval: config.webhooks.poll_interval,
    onAttempt: (outcome, durationMs) => metrics.observeWebhook(outcome, durationMs / 1000),
  });
  return { webhooks, dispatcher };
}
