import type { Resolver } from 'node:dns/promises';
import type { Lifecycle } from '../api/deps.js';
import { buildMetricsListener } from '../api/metrics-listener.js';
import { buildApi } from '../api/server.js';
import { buildUnsubscribeListener } from '../api/unsubscribe-listener.js';
import { buildDashboard } from '../dashboard/server.js';
import type { DoctorReport } from '../domain/doctor.js';
import { createListener } from '../inbound/listener.js';
import type { Listeners } from '../lib/listen.js';
import type { MemoryBudget } from '../lib/memory-budget.js';
import type { Metrics } from '../lib/metrics.js';
import { AuthCache } from '../store/auth-cache.js';
import type { Store } from '../store/store.js';
import { createSubmission } from '../submission/listener.js';
import type { WebhookService } from '../webhooks/service.js';
import type { Ctx } from './context.js';

/** What the listeners are built on: the shared services, and what to call once work is committed. */
export interface ListenerDeps {
  store: Store;
  resolver: Resolver;
  returnPathSecret: Buffer;
  unsubscribeSecret: Buffer;
  metrics: Metrics;
  budget: MemoryBudget;
  webhooks: WebhookService;
  lifecycle: Lifecycle;
  /** The deliverability doctor's last report on this node. */
  doctor: { last(): DoctorReport | null };
  /** Work committed here: this node's loops look now, and the other nodes are told. */
  queued: { outbound: () => void; events: () => void };
}

/** Step: every listener, built and not yet bound: inbound SMTP, the API, submission, the dashboard, /metrics and one-click unsubscribe (each when configured). */
export function buildListeners(ctx: Ctx, deps: ListenerDeps): Listeners {
  const { config, log, clock, settings } = ctx;
  const { store, resolver, metrics, budget, webhooks, lifecycle, queued } = deps;
  const listener = createListener({
    budget,
    store,
    config,
    settings: settings.inbound,
    clock,
    log,
    resolver,
    returnPathSecret: deps.returnPathSecret,
    unsubscribeSecret: deps.unsubscribeSecret,
    isShuttingDown: () => lifecycle.shuttingDown,
    onEvents: queued.events,
    onResult: (result) => metrics.inbound.inc({ result }),
  });
  // One cache of keys and sending domains for both ways of sending (one auth epoch).
  const auth = new AuthCache(store);
  const app = buildApi({
    store,
    auth,
    config,
    send: settings.send,
    clock,
    log,
    lifecycle,
    webhooks,
    metrics,
    budget,
    onAccepted: queued.outbound,
  });
  const submission = createSubmission({
    store,
    auth,
    config,
    send: settings.send,
    settings: settings.submission,
    clock,
    log,
    budget,
    isShuttingDown: () => lifecycle.shuttingDown,
    onAccepted: queued.outbound,
    onAuth: (result) => metrics.submissionAuth.inc({ result }),
    onResult: (result) => metrics.submission.inc({ result }),
  });
  // /metrics on its own address when metrics.listen is set; on the API listener otherwise (api/server.ts).
  return {
    smtp: listener,
    api: app,
    dashboard: config.dashboard.listen ? dashboardListener(ctx, deps) : undefined,
    metrics: config.metrics.enabled && config.metrics.listen ? buildMetricsListener(metrics, log) : undefined,
    submission,
    unsubscribe: config.unsubscribe.listen
      ? buildUnsubscribeListener({ store, secret: deps.unsubscribeSecret, clock, log, onEvents: queued.events })
      : undefined,
  };
}

/** The dashboard's listener, on the services the API has too. */
function dashboardListener(ctx: Ctx, deps: ListenerDeps) {
  const { config, log, clock, settings } = ctx;
  const { store, resolver, budget, webhooks, queued } = deps;
  return buildDashboard({
    store,
    config,
    clock,
    log,
    webhooks,
    resolver,
    budget,
    doctor: deps.doctor.last,
    send: settings.send,
    onQueued: queued.outbound,
  });
}
