import { type DeclaredRoute, declaredRoutes } from './api/authorization.js';
import type { Lifecycle } from './api/deps.js';
import type { ClusterNode } from './cluster/node.js';
import { configWarnings } from './config/load.js';
import type { Config } from './config/schema.js';
import { joinCluster } from './daemon/cluster.js';
import { type Ctx, startSettings } from './daemon/context.js';
import type { DoctorRuns } from './daemon/doctor.js';
import { buildListeners } from './daemon/listeners.js';
import { type Loops, startLoops } from './daemon/loops.js';
import { type ReloadParts, reloader } from './daemon/reload.js';
import { type Services, startServices } from './daemon/services.js';
import { checkSourcesLocal } from './daemon/sources.js';
import { firstSteps, prepareStore } from './daemon/store.js';
import type { TlsReportRuns } from './daemon/tls-reports.js';
import { type Clock, systemClock } from './lib/clock.js';
import { bindListeners, checkListen, closeListeners, type Listeners, listenSpecs } from './lib/listen.js';
import type { Logger } from './lib/logger.js';
import { relayOptions } from './outbound/routing/relay.js';
import type { Scheduler } from './outbound/scheduler.js';
import { type DataDirLock, lockDataDir, openStore } from './store/open.js';
import type { Store } from './store/store.js';
import type { Dispatcher } from './webhooks/dispatcher.js';

export interface Daemon {
  /** Where the API listens (resolved port when 0 was asked for). */
  apiUrl: string;
  /** The API's routes under /api/ and the scope each needs, as its app has them (api/authorization.ts). */
  apiRoutes: readonly DeclaredRoute[];
  /** Where the dashboard listens; null when dashboard.listen is empty. */
  dashboardUrl: string | null;
  /** Where /metrics is served on its own listener; null when metrics are off or on the API listener. */
  metricsUrl: string | null;
  /** The one-click unsubscribe listener's own address (unsubscribe.listen), not its public URL; null when off. */
  unsubscribeUrl: string | null;
  /** Where inbound SMTP listens. */
  smtp: { host: string; port: number };
  /** Where submission listens, by key (submission.listen, submission.listen_tls); empty when off. */
  submission: Record<string, { host: string; port: number }>;
  scheduler: Scheduler;
  dispatcher: Dispatcher;
  /** The deliverability doctor's hourly run on this node: its last report, and a run now. */
  doctor: Pick<DoctorRuns, 'last' | 'run'>;
  /** The TLS reports of a day sent now (as the job does after midnight). */
  tlsReports: Pick<TlsReportRuns, 'run' | 'due'>;
  /** This node: its id (the worker its claims carry) and server.node_name. */
  node: { id: string; name: string };
  /** What a first run still lacks, asked of the store now: no usable API key, no dashboard user. */
  firstSteps(): Promise<{ needsKey: boolean; needsUser: boolean }>;
  stop(): Promise<void>;
  /** SIGHUP: applies what can change safely; says which changed keys need a restart. */
  reload(next: Config): { applied: string[]; restart_needed: string[] };
}

/** How long stop() waits for in-flight deliveries and webhook attempts before abandoning them (their claims are released as the node leaves). */
export const INFLIGHT_GRACE_MS = 15_000;

export interface DaemonOptions {
  clock?: Clock;
  /** Tests drive delivery by hand (scheduler.drain with a manual clock) instead of the loop. */
  manualDelivery?: boolean;
}

/** How long SIGTERM may take before the process gives up waiting (docs/operations.md: exit within 30 s). */
export const SHUTDOWN_GRACE_MS = 28_000;

export { NodeNameTaken } from './cluster/node.js';
export { RETURN_PATH_SECRET, StoreUnreachable } from './daemon/store.js';

/**
 * The daemon, holding its data directory for its life (store/sqlite/lock.ts): a second daemon on
 * the same store refuses to start before it opens anything; a start that fails lets go of it.
 */
export async function startDaemon(config: Config, log: Logger, opts: DaemonOptions = {}): Promise<Daemon> {
  // One daemon per SQLite store; nodes on PostgreSQL share theirs (docs/cluster.md).
  const lock = config.store.url === '' ? lockDataDir(config.server.data_dir) : { release: () => undefined };
  try {
    for (const w of configWarnings(config)) log.warn({ key: w.key, value: w.value }, w.message);
    return await startLocked(config, log, opts, lock);
  } catch (e) {
    lock.release();
    throw e;
  }
}

/**
 * The composition root, as named steps: store → shared services → webhooks → outbound → the
 * background loops → listeners. Signals are wired by the caller. Each step's wiring is in
 * src/daemon/; the order of start and stop is here.
 */
async function startLocked(config: Config, log: Logger, opts: DaemonOptions, lock: DataDirLock): Promise<Daemon> {
  // First: an address that cannot be had stops the start before anything opens or answers.
  await checkListen(listenSpecs(config));
  await checkSourcesLocal(config.outbound.pools); // a pool address that is not this machine's stops the start
  const ctx: Ctx = { config, log, clock: opts.clock ?? systemClock, settings: startSettings(config) };
  const relay = relayOptions(config); // before anything opens: a relay user without a password stops the start
  const store = openStore(config, {
    daemon: true,
    applicationName: `posthaste ${config.server.node_name} ${process.pid}`,
  });
  const node = await openNode(ctx, store);
  const services = await startServices(ctx, store, node, relay);
  // A node whose heartbeat comes back claims at once, and work freed from dead nodes is claimed at once, here or on another node.
  node.onAlive(() => {
    services.queued.outbound();
    services.queued.events();
  });

  const up = { listeners: false };
  const lifecycle: Lifecycle = { shuttingDown: false, listenersUp: () => up.listeners };
  const listeners = buildListeners(ctx, { store, lifecycle, ...services });
  const bound = await bindOrUnwind(ctx, store, node, services, listeners);
  const { apiUrl, dashboardUrl, metricsUrl, unsubscribeUrl } = bound;
  up.listeners = true;
  const loops = await startLoops(ctx, store, node, services, !!opts.manualDelivery);
  announce(ctx, bound, node.id);

  const { scheduler, dispatcher } = services;
  const reloadParts: ReloadParts = {
    log,
    settings: ctx.settings,
    store,
    scheduler,
    listener: listeners.smtp,
    submission: listeners.submission.map((l) => l.server),
  };
  return {
    apiUrl,
    apiRoutes: declaredRoutes(listeners.api),
    dashboardUrl,
    metricsUrl,
    unsubscribeUrl,
    smtp: bound.smtp,
    submission: bound.submission,
    scheduler,
    dispatcher,
    doctor: services.doctor,
    tlsReports: services.tlsReports,
    node: { id: node.id, name: config.server.node_name },
    firstSteps: () => firstSteps(store),
    reload: reloader(config, log, reloadParts),
    stop: () =>
      stopDaemon({
        ctx,
        store,
        node,
        lock,
        services,
        listeners,
        lifecycle,
        up,
        loops,
        manualDelivery: !!opts.manualDelivery,
      }),
  };
}

/** The line that says the daemon is up, with where each listener is and the data directory. */
function announce(ctx: Ctx, bound: Awaited<ReturnType<typeof bindOrUnwind>>, nodeId: string): void {
  const { smtp, apiUrl, dashboardUrl, metricsUrl, unsubscribeUrl } = bound;
  const submission = Object.fromEntries(
    Object.entries(bound.submission).map(([key, a]) => [key, `${a.host}:${a.port}`]),
  );
  ctx.log.info(
    {
      api: apiUrl,
      smtp: `${smtp.host}:${smtp.port}`,
      submission,
      dashboard: dashboardUrl,
      metrics: metricsUrl,
      unsubscribe: unsubscribeUrl,
      data_dir: ctx.config.server.data_dir,
      node_id: nodeId,
    },
    'posthaste is running',
  );
}

/** Step: the store, migrated, and this process joined as a node; a failure closes the store. */
async function openNode(ctx: Ctx, store: Store): Promise<ClusterNode> {
  try {
    await prepareStore(ctx, store);
    return await joinCluster(ctx, store);
  } catch (e) {
    await store.admin.close().catch(() => undefined);
    throw e;
  }
}

/** Step: every listener bound; when one cannot be, what started is stopped again and the start fails. */
async function bindOrUnwind(
  { config, log }: Ctx,
  store: Store,
  node: ClusterNode,
  services: Services,
  listeners: Listeners,
): Promise<Awaited<ReturnType<typeof bindListeners>>> {
  try {
    return await bindListeners(config, log, listeners);
  } catch (e) {
    await services.schedules.stop();
    await Promise.all([services.signer.close(), services.webhooks.fetch.close()]);
    await node.stop();
    await store.admin.close();
    throw e;
  }
}

/** What stop() takes down. */
interface Running {
  ctx: Ctx;
  store: Store;
  node: ClusterNode;
  lock: DataDirLock;
  services: Services;
  listeners: Listeners;
  lifecycle: Lifecycle;
  up: { listeners: boolean };
  loops: Loops;
  manualDelivery: boolean;
}

/** Stop, in order: listeners, schedule and wakeups, the loops (with a grace), the node's claims, the threads and clients, the store, the lock. */
async function stopDaemon({
  ctx,
  store,
  node,
  lock,
  services,
  listeners,
  lifecycle,
  up,
  loops,
  manualDelivery,
}: Running): Promise<void> {
  lifecycle.shuttingDown = true;
  await closeListeners(listeners);
  up.listeners = false;
  await services.schedules.stop();
  await loops.wakeups.close();
  loops.abort.abort();
  const abandoned = await Promise.race([
    Promise.all([loops.delivery, loops.dispatching]).then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(true), INFLIGHT_GRACE_MS).unref()),
  ]);
  if (abandoned)
    ctx.log.warn(
      'in-flight deliveries or webhook attempts abandoned at shutdown; their claims are released as the node leaves',
    );
  if (manualDelivery) {
    await services.scheduler.stop();
    await services.dispatcher.resign();
  }
  // This node's claims released and its row removed, once nothing of it runs.
  await node.stop();
  await services.tlsReports.closeSessions();
  await services.signer.close();
  await services.webhooks.fetch.close();
  // Last: the dispatcher's final attempt log goes through the store's writes still under way.
  await store.admin.close();
  lock.release();
}
