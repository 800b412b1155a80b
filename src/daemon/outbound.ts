import type { Resolver } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { ClusterNode } from '../cluster/node.js';
import { configuredDefaultPool, returnPathDomain, returnPathLabel } from '../config/settings.js';
import { CLUSTER_THROTTLE, destinationOf, destinationOfLane } from '../domain/destinations.js';
import { type DeliveryItem, deliverGroup, type GroupResult, type GroupWatch } from '../outbound/deliver.js';
import { Dane } from '../outbound/routing/dane.js';
import { MtaSts } from '../outbound/routing/mta-sts.js';
import { MxResolver } from '../outbound/routing/mx.js';
import { TlsSessionLog } from '../outbound/routing/tls-sessions.js';
import { Scheduler } from '../outbound/scheduler.js';
import { SignerPool } from '../outbound/signing/signer.js';
import { BdatMemory, type RelayOptions, type SmtpOptions } from '../outbound/smtp/session.js';
import { type SourceNeed, SourcePicker } from '../outbound/source.js';
import { Throttle } from '../outbound/throttle.js';
import { WarmupLedger } from '../outbound/warmup.js';
import type { Store } from '../store/store.js';
import type { Ctx } from './context.js';
import { checkSourcesDns } from './sources.js';

/** What a delivery looks up and trusts: MX hosts, MTA-STS and DANE policies (each when on), and the extra CA of outbound.tls_ca_file. */
interface Lookups {
  mx: MxResolver;
  mtaSts: MtaSts | undefined;
  dane: Dane | undefined;
  extraCa: string[];
}

/** Everything the delivery of one group is handed, once built. */
interface Delivery {
  lookups: Lookups;
  relay: RelayOptions | null;
  returnPathSecret: Buffer;
  unsubscribeSecret: Buffer;
  signer: SignerPool;
  smtp: SmtpOptions;
  /** outbound.pools: the source of each connection; undefined without pools. */
  sources: SourcePicker | undefined;
  /** Each MX connection's TLS counted for the TLS reports; undefined when tlsrpt.enabled is off or mail goes through a relay. */
  tlsLog: TlsSessionLog | undefined;
}

/** How often the TLS sessions counted in memory are added to the store's counters. */
const TLS_FLUSH_MS = 10_000;

/** Step: the outbound side: MX and MTA-STS lookups, the signing threads, and the scheduler with its destinations' throttle. */
export async function buildOutbound(
  ctx: Ctx,
  store: Store,
  resolver: Resolver,
  relay: RelayOptions | null,
  returnPathSecret: Buffer,
  unsubscribeSecret: Buffer,
  node: ClusterNode,
  hooks: { onEvents: () => void; onOutcome: (kind: string, acceptedAt: number) => void },
): Promise<{ scheduler: Scheduler; signer: SignerPool; tlsLog: TlsSessionLog | undefined }> {
  const { config, log, clock, settings } = ctx;
  const o = config.outbound;
  const lookups = outboundLookups(ctx, resolver);
  if (relay)
    log.info(
      {
        relay: `${relay.implicitTls ? 'smtps' : 'smtp'}://${relay.host}:${relay.port}`,
        user: relay.auth?.user ?? null,
      },
      'all mail goes through the relay host',
    );
  const signer = new SignerPool(o.signing_threads || cpus().length);
  const sources = sourcePicker(ctx, store, resolver);
  const tlsLog = config.tlsrpt.enabled && !relay ? new TlsSessionLog(store, clock, log) : undefined;
  tlsLog?.start(TLS_FLUSH_MS);
  const delivery: Delivery = {
    lookups,
    relay,
    returnPathSecret,
    unsubscribeSecret,
    signer,
    smtp: smtpOptions(ctx, lookups.extraCa),
    sources,
    tlsLog,
  };
  // Destination throttling: each node's own by its name, or one for all (limits_scope = "cluster").
  const throttleHolder = o.limits_scope === 'cluster' ? CLUSTER_THROTTLE : config.server.node_name;
  const scheduler = new Scheduler({
    store: store.delivery,
    clock,
    log,
    policy: { retrySchedule: o.retry_schedule, maxQueueTime: o.max_queue_time },
    concurrency: o.concurrency,
    throttle: new Throttle(
      (key) => settings.outbound.current.limits(destinationOfLane(key)),
      await store.delivery.throttles(throttleHolder),
    ),
    destinationOf: async (domain) => {
      if (relay) return relay.host;
      const found = await lookups.mx.resolve(domain);
      // No answer now: the destination cannot be told (the cache keeps the one it learnt).
      if (found.kind === 'temporary') throw new Error(found.detail);
      return (found.kind === 'hosts' && destinationOf(found.hosts)) || domain;
    },
    claimBatch: o.claim_batch,
    pollInterval: o.poll_interval,
    worker: node.id,
    canClaim: () => node.canClaim(),
    ...(o.limits_scope === 'cluster' ? { sharedAs: node.id } : {}),
    throttleHolder,
    held: () => settings.outbound.current.hold,
    pausedCustomers: () => store.reputation.paused(),
    onEvents: hooks.onEvents,
    onOutcome: hooks.onOutcome,
    ...(sources ? { sources } : {}),
    ...warmupOf(ctx, store),
    deliver: (domain, items, watch, need) => deliver(ctx, store, delivery, domain, items, watch, need),
  });
  return { scheduler, signer, tlsLog };
}

/** The warm-up of the pools' addresses (docs/delivery.md, "Warm-up"), when any has a warmup_start. */
function warmupOf({ config, log, clock }: Ctx, store: Store): { warmup?: WarmupLedger } {
  const { pools, warmup_schedule: schedule } = config.outbound;
  if (!pools.some((p) => p.addresses.some((a) => a.warmup_start !== undefined))) return {};
  return { warmup: new WarmupLedger({ store, clock, schedule, pools, log }) };
}

/** outbound.pools: what chooses each connection's source address, their PTR records checked in the background; undefined without pools. */
function sourcePicker({ config, log, clock }: Ctx, store: Store, resolver: Resolver): SourcePicker | undefined {
  const pools = config.outbound.pools;
  const defaultPool = configuredDefaultPool(config);
  if (!defaultPool) return undefined;
  void checkSourcesDns(pools, resolver, log).catch((e: unknown) =>
    log.warn({ err: e }, "the source addresses' PTR records could not be checked"),
  );
  log.info(
    { pools: pools.map((p) => p.name), default_pool: defaultPool.name },
    'outbound connections bind the addresses of outbound.pools',
  );
  return new SourcePicker({ pools, defaultPool, customerPools: () => store.customers.pools(), clock, log });
}

/** MX and the policies through the resolver on dns.servers; DANE warns when that resolver is not on loopback. */
function outboundLookups({ config, log, clock }: Ctx, resolver: Resolver): Lookups {
  const o = config.outbound;
  const mx = new MxResolver(resolver, clock);
  const extraCa = o.tls_ca_file ? [readFileSync(o.tls_ca_file, 'utf8')] : [];
  const mtaSts = o.mta_sts
    ? new MtaSts(resolver, clock, { port: o.mta_sts_port, extraCa, timeoutMs: 10_000 })
    : undefined;
  const dane = o.dane ? Dane.through(resolver, clock, o.port) : undefined;
  if (dane && !dane.onLoopback)
    log.warn(
      { servers: resolver.getServers() },
      'outbound.dane trusts the DNS servers to validate DNSSEC: use a validating resolver on loopback',
    );
  return { mx, mtaSts, dane, extraCa };
}

/** The SMTP client's options: our name, the port, the timeouts, TLS trust, CHUNKING and its memory. */
function smtpOptions({ config, clock }: Ctx, extraCa: string[]): SmtpOptions {
  const o = config.outbound;
  const timeouts = {
    connectTimeout: o.connect_timeout,
    greetingTimeout: o.greeting_timeout,
    commandTimeout: o.command_timeout,
  };
  return {
    name: config.server.hostname,
    port: o.port,
    ...timeouts,
    extraCa,
    chunking: o.chunking,
    bdatMemory: new BdatMemory(clock),
  };
}

/** One group for one domain, delivered with the suppression policy as it stands now (a reload may change it). */
function deliver(
  { config, log, settings }: Ctx,
  store: Store,
  d: Delivery,
  domain: string,
  items: DeliveryItem[],
  watch?: GroupWatch,
  need?: SourceNeed,
): Promise<GroupResult> {
  const { mx, mtaSts, dane } = d.lookups;
  return deliverGroup(
    {
      store,
      mx,
      log,
      sign: (input) => d.signer.sign(input),
      ...(mtaSts ? { mtaSts } : {}),
      ...(dane ? { dane } : {}),
      ...(d.relay ? { relay: d.relay } : {}),
      ...(d.sources ? { sources: d.sources } : {}),
      ...(d.tlsLog ? { tlsLog: d.tlsLog } : {}),
      returnPathSecret: d.returnPathSecret,
      returnPathDomain: returnPathDomain(config),
      unsubscribe: { publicUrl: config.unsubscribe.public_url, secret: d.unsubscribeSecret },
      returnPathLabel: returnPathLabel(config),
      suppression: settings.outbound.current.suppression,
      smtp: d.smtp,
    },
    domain,
    items,
    watch,
    need,
  );
}
