import { returnPathDomain, type Config } from './config/schema.js';
import {
  live,
  inboundSettings,
  outboundSettings,
  sendSettings,
  submissionSettings,
  type InboundSettings,
  type Live,
  type OutboundSettings,
  type SendSettings,
  type SubmissionSettings,
} from './config/settings.js';
import { openStore } from './store/open.js';
import type { Store } from './store/store.js';
import { isStoreUnavailable } from './store/errors.js';
import { AuthCache } from './store/auth-cache.js';
import { buildApi } from './api/server.js';
import { ConfigError, configWarnings } from './config/load.js';
import { lockDataDir, type DataDirLock } from './store/open.js';
import { systemClock, type Clock } from './lib/clock.js';
import { createResolver } from './lib/dns.js';
import type { Logger } from './lib/logger.js';
import type { Lifecycle } from './api/deps.js';
import { MxResolver } from './outbound/mx.js';
import { deliverGroup } from './outbound/deliver.js';
import { BdatMemory, type RelayOptions } from './outbound/smtp.js';
import { relayOptions } from './outbound/relay.js';
import { Dane } from './outbound/dane.js';
import { Scheduler } from './outbound/scheduler.js';
import { Throttle } from './outbound/throttle.js';
import { CLUSTER_THROTTLE, destinationOf } from './domain/destinations.js';
import { SignerPool } from './outbound/signer.js';
import { MtaSts } from './outbound/mta-sts.js';
import { readFileSync } from 'node:fs';
import { Dispatcher } from './webhooks/dispatcher.js';
import { createListener } from './inbound/listener.js';
import { Metrics } from './lib/metrics.js';
import { MemoryBudget } from './lib/memory-budget.js';
import cron from 'node-cron';
import { createWebhookService } from './webhooks/create.js';
import { cpus } from 'node:os';
import type { Resolver } from 'node:dns/promises';
import type { SMTPServer } from 'smtp-server';
import { buildDashboard } from './dashboard/server.js';
import { bindListeners, checkListen, closeListeners, listenSpecs, type Listeners } from './lib/listen.js';
import { buildMetricsListener } from './api/metrics-listener.js';
import { createSubmission } from './submission/listener.js';
import { ClusterNode } from './cluster/node.js';
import { randomUUID } from 'node:crypto';

/**
 * The webhook fan-out's lease: a node that stops renewing it (dead, paused, cut off from the
 * database) is replaced by another within this long; renewed every third of it.
 */
const FANOUT_LEASE_MS = 15_000;

export interface Daemon {
  /** Where the API listens (resolved port when 0 was asked for). */
  apiUrl: string;
  /** Where the dashboard listens; null when dashboard.listen is empty. */
  dashboardUrl: string | null;
  /** Where /metrics is served on its own listener; null when metrics are off or on the API listener. */
  metricsUrl: string | null;
  /** Where inbound SMTP listens. */
  smtp: { host: string; port: number };
  /** Where submission listens, by key (submission.listen, submission.listen_tls); empty when off. */
  submission: Record<string, { host: string; port: number }>;
  scheduler: Scheduler;
  dispatcher: Dispatcher;
  /** This node: its id (the worker its claims carry) and server.node_name. */
  node: { id: string; name: string };
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

export const RETURN_PATH_SECRET = 'return_path_secret';

/** The store named by the configuration cannot be reached at start: the daemon does not start. */
export class StoreUnreachable extends Error {}

/** What the steps share: the configuration as started (never changed), the log, the clock, and each part's settings that reloads replace. */
interface Ctx {
  config: Config;
  log: Logger;
  clock: Clock;
  settings: Settings;
}

/** The parts' reloadable settings (config/settings.ts). */
interface Settings {
  inbound: Live<InboundSettings>;
  send: Live<SendSettings>;
  outbound: Live<OutboundSettings>;
  submission: Live<SubmissionSettings>;
}

/** Step: the store, migrated, with the default customer. */
async function prepareStore({ log, clock }: Ctx, store: Store): Promise<void> {
  if (store.engine === 'postgres') log.info({ store: store.location }, 'store: PostgreSQL');
  let applied: number[];
  try {
    applied = await store.admin.migrate(clock.now());
  } catch (e) {
    // Unreachable, refused, a wrong password or database name: the first use names the store (the URL without its password).
    const code = (e as { code?: unknown }).code;
    if (!isStoreUnavailable(e) && !(typeof code === 'string' && /^(28|3D)/.test(code))) throw e;
    throw new StoreUnreachable(`cannot use the store at ${store.location} (store.url): ${(e as Error).message}; is the database running, and the URL, user and password right?`);
  }
  for (const warning of await store.admin.checks()) log.warn(warning);
  if (applied.length > 0) log.info({ applied }, 'database migrated');
  await store.customers.ensureDefault(clock.now());
}

/**
 * Step: this process as a node (cluster/node.ts): registered with a fresh id, the claims of dead
 * nodes (and of a previous run on SQLite, which one process holds alone) released before it
 * claims anything, then its heartbeat.
 */
async function joinCluster({ config, log }: Ctx, store: Store, onAlive: () => void): Promise<ClusterNode> {
  if (config.cluster.lease < 1000) throw new ConfigError('cluster.lease', 'must be at least 1s');
  const node = new ClusterNode({
    store: store.nodes,
    info: { id: randomUUID(), name: config.server.node_name, pid: process.pid, leaseMs: config.cluster.lease },
    exclusive: store.engine === 'sqlite',
    log,
    onAlive,
  });
  await node.start();
  return node;
}

/** Step: the outbound side: MX and MTA-STS lookups, the signing threads, and the scheduler with its destinations' throttle. */
async function buildOutbound(
  { config, log, clock, settings }: Ctx,
  store: Store,
  resolver: Resolver,
  relay: RelayOptions | null,
  returnPathSecret: Buffer,
  node: ClusterNode,
  hooks: { onEvents: () => void; onOutcome: (kind: string, acceptedAt: number) => void },
): Promise<{ scheduler: Scheduler; signer: SignerPool }> {
  const o = config.outbound;
  const mx = new MxResolver(resolver, clock);
  const extraCa = o.tls_ca_file ? [readFileSync(o.tls_ca_file, 'utf8')] : [];
  const mtaSts = o.mta_sts ? new MtaSts(resolver, clock, { port: o.mta_sts_port, extraCa, timeoutMs: 10_000 }) : undefined;
  const dane = o.dane ? Dane.through(resolver, clock, o.port) : undefined;
  if (dane && !dane.onLoopback) log.warn({ servers: resolver.getServers() }, 'outbound.dane trusts the DNS servers to validate DNSSEC: use a validating resolver on loopback');
  if (relay) log.info({ relay: `${relay.implicitTls ? 'smtps' : 'smtp'}://${relay.host}:${relay.port}`, user: relay.auth?.user ?? null }, 'all mail goes through the relay host');
  const signer = new SignerPool(o.signing_threads || cpus().length);
  const timeouts = { connectTimeout: o.connect_timeout, greetingTimeout: o.greeting_timeout, commandTimeout: o.command_timeout };
  const smtp = { name: config.server.hostname, port: o.port, ...timeouts, extraCa, chunking: o.chunking, bdatMemory: new BdatMemory(clock) };
  // Destination throttling: each node's own by its name, or one for all (limits_scope = "cluster").
  const throttleHolder = o.limits_scope === 'cluster' ? CLUSTER_THROTTLE : config.server.node_name;
  const scheduler = new Scheduler({
    store: store.delivery,
    clock,
    log,
    policy: { retrySchedule: o.retry_schedule, maxQueueTime: o.max_queue_time },
    concurrency: o.concurrency,
    throttle: new Throttle((destination) => settings.outbound.current.limits(destination), await store.delivery.throttles(throttleHolder)),
    destinationOf: async (domain) => {
      if (relay) return relay.host;
      const found = await mx.resolve(domain);
      return (found.kind === 'hosts' && destinationOf(found.hosts)) || domain;
    },
    claimBatch: o.claim_batch,
    pollInterval: o.poll_interval,
    worker: node.id,
    canClaim: () => node.canClaim(),
    ...(o.limits_scope === 'cluster' ? { sharedAs: node.id } : {}),
    throttleHolder,
    held: () => settings.outbound.current.hold,
    onEvents: hooks.onEvents,
    onOutcome: hooks.onOutcome,
    deliver: (domain, items) =>
      deliverGroup(
        {
          store,
          mx,
          log,
          sign: (input) => signer.sign(input),
          ...(mtaSts ? { mtaSts } : {}),
          ...(dane ? { dane } : {}),
          ...(relay ? { relay } : {}),
          returnPathSecret,
          returnPathDomain: returnPathDomain(config),
          suppression: settings.outbound.current.suppression,
          smtp,
        },
        domain,
        items,
      ),
  });
  return { scheduler, signer };
}

/**
 * A scheduled run belongs to one node: every node's schedule fires, the first to claim it in the
 * store runs it, and no node claims again for this long (nodes' clocks may differ by less).
 */
const RETENTION_GAP_MS = 30_000;

/**
 * Step: retention on its schedule (node-cron), run by one node of several on one database; a bad
 * expression stops the start like any bad config.
 */
function scheduleRetention({ config, log, clock }: Ctx, store: Store): { stop(): void | Promise<void> } {
  if (!cron.validate(config.retention.schedule)) throw new ConfigError('retention.schedule', `"${config.retention.schedule}" is not a cron expression`);
  return cron.schedule(config.retention.schedule, async () => {
    try {
      if (!(await store.admin.claimJob('retention', RETENTION_GAP_MS))) return log.debug('retention: another node runs this one');
      const purged = await store.admin.purgeOld(clock.now(), config.retention.days);
      if (purged.messages || purged.attempts) log.info(purged, 'retention: purged');
    } catch (e) {
      log.error({ err: e }, 'retention job failed');
    }
  });
}

/**
 * What SIGHUP can change in the running daemon, part by part: the keys a part takes, and how the
 * new values are handed to it (its settings built again from the new configuration, or a call).
 * The one place that decides what is reloadable: every other changed key needs a restart. A key
 * may reach more than one part (bounces.*: inbound reports and delivery replies).
 */
interface Reloader {
  part: string;
  keys: string[];
  apply(next: Config, changed: Set<string>, parts: ReloadParts): void;
}

interface ReloadParts {
  log: Logger;
  settings: Settings;
  store: Store;
  scheduler: Scheduler;
  listener: SMTPServer;
  submission: SMTPServer[];
}

const BOUNCES = ['bounces.suppress_mailbox_full', 'bounces.suppress_disabled'];

export const RELOADERS: readonly Reloader[] = [
  { part: 'log', keys: ['log.level'], apply: (next, _, { log }) => void (log.level = next.log.level) },
  {
    part: 'inbound listener',
    keys: ['inbound.rate_per_minute', 'inbound.monthly_limit', 'smtp.tls.cert', 'smtp.tls.key', ...BOUNCES],
    apply: (next, changed, { settings, listener }) => {
      // The new certificate first (a file that cannot be read leaves everything as it was), then
      // the settings the listener reads per connection, STARTTLS offered or not among them.
      if ((changed.has('smtp.tls.cert') || changed.has('smtp.tls.key')) && next.smtp['tls.cert'] && next.smtp['tls.key'])
        listener.updateSecureContext({ key: readFileSync(next.smtp['tls.key']), cert: readFileSync(next.smtp['tls.cert']) });
      settings.inbound.current = inboundSettings(next);
    },
  },
  {
    part: 'outbound',
    keys: ['outbound.concurrency_per_domain', 'outbound.messages_per_connection', 'outbound.messages_per_minute', 'outbound.destination_limits', 'outbound.hold', ...BOUNCES],
    apply: (next, changed, { settings, scheduler, log }) => {
      settings.outbound.current = outboundSettings(next);
      if (changed.has('outbound.hold')) {
        log.warn({ hold: next.outbound.hold }, next.outbound.hold ? 'outbound queue held: nothing is sent until outbound.hold = false' : 'outbound queue released');
        scheduler.kick();
      }
    },
  },
  { part: 'send API', keys: ['limits.max_recipients', 'limits.idempotency_ttl'], apply: (next, _, { settings }) => void (settings.send.current = sendSettings(next)) },
  {
    part: 'submission',
    keys: ['submission.tls.cert', 'submission.tls.key'],
    apply: (next, _, { settings, submission }) => {
      // As the inbound listener: the new certificate for the next handshake on both listeners,
      // and STARTTLS offered or not from the next connection on.
      const s = next.submission;
      if (s['tls.cert'] && s['tls.key']) {
        const context = { key: readFileSync(s['tls.key']), cert: readFileSync(s['tls.cert']) };
        for (const server of submission) server.updateSecureContext(context);
      }
      settings.submission.current = submissionSettings(next);
    },
  },
  {
    part: 'store',
    keys: ['limits.max_store_bytes'],
    apply: (next, _, { store }) => store.admin.setMaxBytes(next.limits.max_store_bytes),
  },
];

/** Every key SIGHUP applies without a restart. */
export const RELOADABLE_KEYS: ReadonlySet<string> = new Set(RELOADERS.flatMap((r) => r.keys));

/** Every key of a configuration as "section.key" → its value as JSON, to compare two. */
function flatConfig(c: Config): Map<string, string> {
  const out = new Map<string, string>();
  for (const [section, keys] of Object.entries(c as unknown as Record<string, Record<string, unknown>>))
    for (const [key, value] of Object.entries(keys)) out.set(`${section}.${key}`, JSON.stringify(value));
  return out;
}

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
 * background loops → listeners. Signals are wired by the caller.
 */
async function startLocked(config: Config, log: Logger, opts: DaemonOptions, lock: DataDirLock): Promise<Daemon> {
  // First: an address that cannot be had stops the start before anything opens or answers.
  await checkListen(listenSpecs(config));
  const settings: Settings = {
    inbound: live(inboundSettings(config)),
    send: live(sendSettings(config)),
    outbound: live(outboundSettings(config)),
    submission: live(submissionSettings(config)),
  };
  const ctx: Ctx = { config, log, clock: opts.clock ?? systemClock, settings };
  const relay = relayOptions(config); // before anything opens: a relay user without a password stops the start
  const store = openStore(config, { daemon: true, applicationName: `posthaste ${config.server.node_name} ${process.pid}` });
  // The loops, once they exist: a node whose heartbeat comes back claims at once, and work freed from dead nodes is claimed at once, here or on another node.
  const wake: { fn: () => void } = { fn: () => undefined };
  let node: ClusterNode;
  try {
    await prepareStore(ctx, store);
    node = await joinCluster(ctx, store, () => wake.fn());
  } catch (e) {
    await store.admin.close().catch(() => undefined);
    throw e;
  }

  // Shared: one resolver on dns.servers (MX, MTA-STS, inbound SPF/DKIM/DMARC, webhook targets);
  // metrics; one budget for the large messages the API and the listener hold in memory at once.
  const resolver = createResolver(config.dns.servers);
  const returnPathSecret = await store.admin.secret(RETURN_PATH_SECRET);
  const metrics = new Metrics(
    {
      recipients: () => store.admin.countsByState('recipients'),
      webhookDeliveries: () => store.admin.countsByState('webhook_deliveries'),
      oldestQueued: () => store.admin.oldestQueuedAt(ctx.clock.now()),
      now: () => ctx.clock.now(),
      // On a shared store the first live node, as status lists them, serves the store's gauges (docs/cluster.md).
      ...(store.engine === 'postgres'
        ? {
            servesStoreGauges: async () => {
              const live = await store.nodes.list();
              return live.length === 0 || live[0]!.id === node.id;
            },
          }
        : {}),
    },
    { processMetrics: config.metrics.enabled, node: { name: config.server.node_name, id: node.id } },
  );
  const budget = new MemoryBudget(config.limits.message_memory);

  const webhooks = createWebhookService(store.webhooks, config, ctx.clock, resolver);
  const dispatcher = new Dispatcher({
    store: store.webhooks,
    clock: ctx.clock,
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
  // Work committed here: this node's loops look now, and the other nodes are told (after the commit).
  const queued = {
    outbound: () => {
      scheduler.kick();
      store.wakeups.notify(node.id, 'outbound');
    },
    events: () => {
      dispatcher.kick();
      store.wakeups.notify(node.id, 'webhooks');
    },
  };
  const { scheduler, signer } = await buildOutbound(ctx, store, resolver, relay, returnPathSecret, node, {
    onEvents: queued.events,
    onOutcome: (kind, acceptedAt) => metrics.observeOutcome(kind, (ctx.clock.now() - acceptedAt) / 1000),
  });
  const retention = scheduleRetention(ctx, store);
  wake.fn = () => {
    queued.outbound();
    queued.events();
  };

  let apiUp = false;
  let smtpUp = false;
  const lifecycle: Lifecycle = { shuttingDown: false, listenersUp: () => apiUp && smtpUp };
  const listener = createListener({
    budget,
    store,
    config,
    settings: settings.inbound,
    clock: ctx.clock,
    log,
    resolver,
    returnPathSecret,
    isShuttingDown: () => lifecycle.shuttingDown,
    onEvents: queued.events,
    onResult: (result) => metrics.inbound.inc({ result }),
  });
  // One cache of keys and sending domains for both ways of sending (one auth epoch).
  const auth = new AuthCache(store);
  const app = buildApi({ store, auth, config, send: settings.send, clock: ctx.clock, log, lifecycle, webhooks, metrics, budget, onAccepted: queued.outbound });
  const submission = createSubmission({
    store,
    auth,
    config,
    send: settings.send,
    settings: settings.submission,
    clock: ctx.clock,
    log,
    budget,
    isShuttingDown: () => lifecycle.shuttingDown,
    onAccepted: queued.outbound,
    onAuth: (result) => metrics.submissionAuth.inc({ result }),
    onResult: (result) => metrics.submission.inc({ result }),
  });
  const dashboard = config.dashboard.listen ? buildDashboard({ store, config, clock: ctx.clock, log, webhooks, resolver, budget }) : undefined;
  // /metrics on its own address when metrics.listen is set; on the API listener otherwise (api/server.ts).
  const listeners: Listeners = { smtp: listener, api: app, dashboard, metrics: config.metrics.enabled && config.metrics.listen ? buildMetricsListener(metrics, log) : undefined, submission };
  let bound: Awaited<ReturnType<typeof bindListeners>>;
  try {
    bound = await bindListeners(config, log, listeners);
  } catch (e) {
    await retention.stop();
    await Promise.all([signer.close(), webhooks.fetch.close()]);
    await node.stop();
    await store.admin.close();
    throw e;
  }
  const { smtp, apiUrl, dashboardUrl, metricsUrl } = bound;
  const submissionAt = Object.fromEntries(Object.entries(bound.submission).map(([key, a]) => [key, `${a.host}:${a.port}`]));
  smtpUp = apiUp = true;
  // The loops start once every listener is bound: a start that fails has delivered nothing.
  const loops = new AbortController();
  const delivery = opts.manualDelivery ? Promise.resolve() : scheduler.run(loops.signal);
  const dispatching = opts.manualDelivery ? Promise.resolve() : dispatcher.run(loops.signal);
  // What the other nodes queue: looked at now rather than at the next poll.
  const wakeups = await store.wakeups.listen(node.id, (kind) => (kind === 'outbound' ? scheduler.kick() : dispatcher.kick()), {
    lost: (e) => log.warn({ err: e.message }, 'wakeups from other nodes lost (LISTEN connection); polling meanwhile, reconnecting'),
    back: () => log.info('wakeups from other nodes heard again'),
  });
  log.info(
    { api: apiUrl, smtp: `${smtp.host}:${smtp.port}`, submission: submissionAt, dashboard: dashboardUrl, metrics: metricsUrl, data_dir: config.server.data_dir, node_id: node.id },
    'posthaste is running',
  );

  const reloadParts: ReloadParts = { log, settings, store, scheduler, listener, submission: submission.map((l) => l.server) };
  // Each key's running value ("section.key" → JSON): the configuration as started, with what reloads applied.
  const running = flatConfig(config);
  return {
    apiUrl,
    dashboardUrl,
    metricsUrl,
    smtp,
    submission: bound.submission,
    scheduler,
    dispatcher,
    node: { id: node.id, name: config.server.node_name },
    reload(next: Config) {
      const after = flatConfig(next);
      const changed = [...after.keys()].filter((k) => running.get(k) !== after.get(k));
      const applied = changed.filter((k) => RELOADABLE_KEYS.has(k));
      const restart = changed.filter((k) => !RELOADABLE_KEYS.has(k));
      // Said at the old level, before a new level could hide it.
      log.info({ applied, restart_needed: restart }, 'configuration reloaded');
      const keys = new Set(applied);
      for (const step of RELOADERS) if (step.keys.some((k) => keys.has(k))) step.apply(next, keys, reloadParts);
      // The next reload compares against what runs now.
      for (const k of applied) running.set(k, after.get(k)!);
      return { applied, restart_needed: restart };
    },
    async stop() {
      lifecycle.shuttingDown = true;
      await closeListeners(listeners);
      apiUp = false;
      smtpUp = false;
      await retention.stop();
      await wakeups.close();
      loops.abort();
      const abandoned = await Promise.race([Promise.all([delivery, dispatching]).then(() => false), new Promise<boolean>((resolve) => setTimeout(() => resolve(true), INFLIGHT_GRACE_MS).unref())]);
      if (abandoned) log.warn('in-flight deliveries or webhook attempts abandoned at shutdown; their claims are released as the node leaves');
      if (opts.manualDelivery) {
        await scheduler.stop();
        await dispatcher.resign();
      }
      // This node's claims released and its row removed, once nothing of it runs.
      await node.stop();
      await signer.close();
      await webhooks.fetch.close();
      // Last: the dispatcher's final attempt log goes through the store's writes still under way.
      await store.admin.close();
      lock.release();
    },
  };
}
