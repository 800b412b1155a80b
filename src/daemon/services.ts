import type { Resolver } from 'node:dns/promises';
import type { ClusterNode } from '../cluster/node.js';
import { createResolver } from '../lib/dns.js';
import { MemoryBudget } from '../lib/memory-budget.js';
import type { Metrics } from '../lib/metrics.js';
import type { Scheduler } from '../outbound/scheduler.js';
import type { SignerPool } from '../outbound/signing/signer.js';
import type { RelayOptions } from '../outbound/smtp/session.js';
import type { Store } from '../store/store.js';
import type { Dispatcher } from '../webhooks/dispatcher.js';
import type { WebhookService } from '../webhooks/service.js';
import type { Ctx } from './context.js';
import { type DoctorRuns, scheduleDoctor } from './doctor.js';
import { scheduleDomainRecheck } from './domain-recheck.js';
import { buildMetrics } from './metrics.js';
import { buildOutbound } from './outbound.js';
import { startReputationCheck, startReputationSettings } from './reputation.js';
import { scheduleRetention } from './retention.js';
import { RETURN_PATH_SECRET, UNSUBSCRIBE_SECRET } from './store.js';
import { scheduleTlsReports, type TlsReportRuns } from './tls-reports.js';
import { buildWebhooks } from './webhooks.js';

/** What the listeners and the loops share, built by startServices. */
export interface Services {
  resolver: Resolver;
  returnPathSecret: Buffer;
  unsubscribeSecret: Buffer;
  metrics: Metrics;
  budget: MemoryBudget;
  webhooks: WebhookService;
  dispatcher: Dispatcher;
  scheduler: Scheduler;
  signer: SignerPool;
  /** The scheduled jobs: retention, the reputation check, the doctor and the domains' re-check. */
  schedules: { stop(): void | Promise<void> };
  doctor: DoctorRuns;
  tlsReports: TlsReportRuns;
  /** Work committed here: this node's loops look now, and the other nodes are told (after the commit). */
  queued: { outbound: () => void; events: () => void };
}

/** Steps: the shared services, webhooks, outbound, the reputation check and the retention schedule, in this order. */
export async function startServices(
  ctx: Ctx,
  store: Store,
  node: ClusterNode,
  relay: RelayOptions | null,
): Promise<Services> {
  // Shared: one resolver on dns.servers (MX, MTA-STS, inbound SPF/DKIM/DMARC, webhook targets);
  // metrics; one budget for the large messages the API and the listener hold in memory at once.
  const resolver = createResolver(ctx.config.dns.servers);
  const returnPathSecret = await store.admin.secret(RETURN_PATH_SECRET);
  const unsubscribeSecret = await store.admin.secret(UNSUBSCRIBE_SECRET);
  const doctor = scheduleDoctor(ctx, store);
  const metrics = buildMetrics(ctx, store, node, doctor.last);
  const budget = new MemoryBudget(ctx.config.limits.message_memory);

  const { webhooks, dispatcher } = buildWebhooks(ctx, store, resolver, node, metrics);
  // Events committed here: this node's fan-out looks now if it is this node's to do (the lease's
  // holder), and the other nodes are told (after the commit).
  const events = () => {
    dispatcher.kickForEvents();
    store.wakeups.notify(node.id, 'webhooks');
  };
  const reputation = startReputationCheck(ctx, store, startReputationSettings(ctx), events);
  const { scheduler, signer, tlsLog } = await buildOutbound(
    ctx,
    store,
    resolver,
    relay,
    returnPathSecret,
    unsubscribeSecret,
    node,
    {
      onEvents: events,
      onOutcome: (kind, acceptedAt) => {
        metrics.observeOutcome(kind, (ctx.clock.now() - acceptedAt) / 1000);
        reputation.kick();
      },
    },
  );
  const queued = {
    outbound: () => {
      scheduler.kick();
      store.wakeups.notify(node.id, 'outbound');
    },
    events,
  };
  const retention = scheduleRetention(ctx, store);
  const recheck = scheduleDomainRecheck(ctx, store, resolver, queued.events);
  const tlsReports = scheduleTlsReports(ctx, store, resolver, node, tlsLog, webhooks.fetch, queued.outbound);
  const schedules = {
    stop: async () => {
      reputation.stop();
      doctor.stop();
      await recheck.stop();
      await tlsReports.stop();
      await retention.stop();
    },
  };
  return {
    resolver,
    returnPathSecret,
    unsubscribeSecret,
    metrics,
    budget,
    webhooks,
    dispatcher,
    scheduler,
    signer,
    schedules,
    doctor,
    tlsReports,
    queued,
  };
}
