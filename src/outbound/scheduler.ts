import type { OutcomePolicy } from '../domain/transitions.js';
import type { Clock } from '../lib/clock.js';
import { KeyedPool } from '../lib/keyed-pool.js';
import type { Logger } from '../lib/logger.js';
import type { DeliveryStore } from '../store/store.js';
import type { DeliveryItem, GroupResult, GroupWatch } from './deliver.js';
import { DestinationCache } from './destination-cache.js';
import { type Held, type Lane, Lanes, type WarmupRoom } from './lanes.js';
import { OperatorView } from './operator.js';
import { PausedCustomers } from './paused-customers.js';
import { OutcomeRecorder } from './recorder.js';
import { SharedLimits } from './shared-limits.js';
import type { SourceNeed, SourcePicker } from './source.js';
import type { Throttle } from './throttle.js';

export interface SchedulerDeps {
  store: DeliveryStore;
  clock: Clock;
  log: Logger;
  /** Delivers a group of items at one domain over one connection (from the need's source address, with pools). */
  deliver: (domain: string, items: DeliveryItem[], watch?: GroupWatch, need?: SourceNeed) => Promise<GroupResult>;
  /** outbound.pools: each connection's source address; absent without pools (the kernel picks). */
  sources?: SourcePicker;
  /** The warm-up of the pools' addresses (outbound/warmup.ts); absent when none warms. */
  warmup?: WarmupRoom;
  /** The destination a domain's mail goes to (domain/destinations.ts), the domain itself when it is its own; rejects when it cannot be told now. */
  destinationOf: (domain: string) => Promise<string>;
  /** Per-destination limits and adaptive backoff (per source address with pools: outbound/lanes.ts). */
  throttle: Throttle;
  policy: OutcomePolicy;
  concurrency: number;
  claimBatch: number;
  pollInterval: number;
  worker: string;
  /** Whether this node may claim now (its heartbeat is recent: cluster/node.ts); always, when not given. */
  canClaim?: () => boolean;
  /** outbound.hold: while true nothing new is claimed (in-flight deliveries finish); read at every step so a reload applies. */
  held?: () => boolean;
  /** The customers whose sending is paused (docs/operations.md, "Reputation"): what waits of theirs goes back unattempted. */
  pausedCustomers?: () => Promise<number[]>;
  /** Called after outcomes (and their events) are committed: the webhook dispatcher can go. */
  onEvents?: () => void;
  /** Counts outcomes (Prometheus), with when the recipient's message was accepted (epoch ms). */
  onOutcome?: (kind: string, acceptedAt: number) => void;
  /**
   * outbound.limits_scope = "cluster": this node's id (unique to the process); each destination's
   * limits are decided against the other nodes' use, shared through the store. Absent: per node.
   */
  sharedAs?: string;
  /**
   * Whose destination throttling this node keeps and reads back at its start: its name (per
   * node, the default: its backoff outlives a restart, other nodes keep theirs), or
   * CLUSTER_THROTTLE with limits_scope = "cluster" (one for all nodes).
   */
  throttleHolder?: string;
}

/**
 * Claims due recipients, groups them by recipient domain, and runs deliveries within the global
 * connection limit and each destination's limits (outbound/throttle.ts). What a destination cannot
 * take now (paused, per_minute spent, more waiting than its connections carry in a round) is held
 * back in the store until it can, so it does not fill the claim room other destinations need.
 * Sandbox recipients never reach `deliver`.
 */
export class Scheduler {
  /** Claimed items waiting by recipient domain, and the deliveries (one connection each) running. */
  private readonly pool: KeyedPool<DeliveryItem>;
  /** Each domain's destination, looked up in the background. */
  private readonly destinations: DestinationCache;
  /** Highest connections seen open at once per destination (read by the tests). */
  readonly peakPerDestination = new Map<string, number>();
  /** Writes what happened: each group's outcomes, the sandbox's, the destinations' throttling. */
  private readonly recorder: OutcomeRecorder;
  /** limits_scope = "cluster": this node's part in the limits the nodes share; absent per node. */
  private readonly shared?: SharedLimits;
  /** The paused customers as last read (absent when the daemon does not say). */
  private readonly paused?: PausedCustomers;
  /** Which connections each destination's recipients may open, and from which source address. */
  private readonly lanes: Lanes;
  /** The held destinations and the retries, as an operator left them. */
  private readonly operator: OperatorView;

  constructor(private readonly deps: SchedulerDeps) {
    this.pool = new KeyedPool({
      concurrency: deps.concurrency,
      onFinish: () => this.kick(),
      onError: (e, domain) => deps.log.error({ err: e, domain }, 'delivery group failed unexpectedly'),
    });
    this.recorder = new OutcomeRecorder({
      ...deps,
      track: (work) => this.pool.track(work),
      stopping: () => this.pool.stopping,
    });
    this.destinations = new DestinationCache({
      lookup: deps.destinationOf,
      clock: deps.clock,
      track: (work) => this.pool.track(work),
      onResolved: () => this.kick(),
      onSweep: (now) => this.forgetIdle(now),
      onLearned: (domain, destination) =>
        this.pool.track(
          deps.store
            .noteDestination(domain, destination, deps.clock.now())
            .catch((e: unknown) => deps.log.warn({ err: e, domain }, 'destination not kept in the store')),
        ),
    });
    if (deps.pausedCustomers)
      this.paused = new PausedCustomers({ ...deps, read: deps.pausedCustomers, track: (w) => this.pool.track(w) });
    // With pools a lane's source address is this node's own, so its limits are this node's to keep.
    if (deps.sharedAs !== undefined && !deps.sources)
      this.shared = new SharedLimits(deps.sharedAs, deps, (work) => this.pool.track(work));
    this.lanes = new Lanes({
      throttle: deps.throttle,
      clock: deps.clock,
      log: deps.log,
      ...(deps.sources ? { sources: deps.sources } : {}),
      ...(deps.warmup ? { warmup: deps.warmup } : {}),
    });
    this.operator = new OperatorView({ ...deps, keysOf: (d) => this.lanes.keysOf(d) });
  }

  /** New work may be due (a message was accepted): look now rather than at the next poll. */
  kick(): void {
    this.pool.wake();
  }

  /** Runs until the signal aborts; then lets in-flight deliveries finish and releases the rest. */
  async run(signal: AbortSignal): Promise<void> {
    await this.pool.run(
      signal,
      this.deps.pollInterval,
      () => this.fill(),
      (e) => this.deps.log.error({ err: e }, 'scheduler: claim failed; retrying'),
    );
    await this.release();
  }

  /** Claims and delivers everything due now, and waits until it is all recorded (tests, with a manual clock). */
  drain(): Promise<void> {
    return this.pool.drain(() => this.fill());
  }

  /** Stops without `run` (tests): in-flight deliveries finish, the rest is released. */
  async stop(): Promise<void> {
    await this.pool.stop();
    await this.release();
  }

  private async release(): Promise<void> {
    this.unreleased.push(...this.pool.takeAll().map((i) => i.recipient.id));
    await this.releaseLeftOver().catch((e: unknown) =>
      this.deps.log.warn(
        { err: e, claims: this.unreleased.length },
        'claims not released at stop; they are at the next start',
      ),
    );
  }

  /** Claims given back that the store did not take (it was unavailable): tried again before each claim. */
  private unreleased: number[] = [];

  private async releaseLeftOver(): Promise<void> {
    if (this.unreleased.length === 0) return;
    const ids = this.unreleased;
    this.unreleased = [];
    try {
      await this.deps.store.releaseClaims(ids);
    } catch (e) {
      this.unreleased.push(...ids);
      throw e;
    }
  }

  /** Claim → group by domain → start within the limits (holding back what must wait); returns how many were claimed. */
  private async fill(): Promise<number> {
    if (this.pool.stopping || this.deps.held?.() || this.deps.canClaim?.() === false) return 0;
    await this.releaseLeftOver();
    const claimed = await this.claim();
    await this.readOperator();
    await this.holdHeld();
    await this.givePausedBack();
    const held: Held[] = [];
    if (this.shared) await this.startShared(this.shared, held);
    else await this.startAll(held);
    if (held.length)
      await this.deps.store.postpone(held).catch((e: unknown) => {
        // Not held back: the claims are given back instead, and the recipients come due again.
        this.unreleased.push(...held.map((h) => h.id));
        throw e;
      });
    return claimed;
  }

  /** Starts what each domain's lanes allow (a warming address within the room reserved for this fill). */
  private async startAll(held: Held[]): Promise<void> {
    if (this.lanes.warms) await this.lanes.reserve(this.known());
    try {
      this.pool.each((domain, list) => {
        const destination = this.destinations.get(domain);
        if (destination !== undefined) held.push(...this.startGroups(domain, destination, list)); // else being looked up; the lookup wakes the loop
      });
    } finally {
      if (this.lanes.warms) await this.lanes.settle();
    }
  }

  /** What an operator did (docs/operations.md, "The queue"), read after every claim while anything waits, whether or not it took something. */
  private async readOperator(): Promise<void> {
    if (this.pool.waitingCount() > 0) await this.operator.read(new Set(this.known().map((k) => k.destination)));
  }

  /** The domains waiting whose destination is known (the others' is being looked up; the lookup wakes the loop). */
  private known(): Array<{ domain: string; destination: string; items: readonly DeliveryItem[] }> {
    const out: Array<{ domain: string; destination: string; items: readonly DeliveryItem[] }> = [];
    this.pool.each((domain, items) => {
      const destination = this.destinations.get(domain);
      if (destination !== undefined) out.push({ domain, destination, items });
    });
    return out;
  }

  /** What waits for a held destination is held in the store, without an attempt, until released. */
  private async holdHeld(): Promise<void> {
    if (!this.operator.holdsAny) return;
    const ids: number[] = [];
    this.pool.each((domain, list) => {
      const destination = this.destinations.get(domain);
      if (destination !== undefined && this.operator.holds(destination))
        ids.push(...list.splice(0).map((i) => i.recipient.id));
    });
    if (ids.length === 0) return;
    await this.deps.store.holdClaimed(ids, this.deps.clock.now()).catch((e: unknown) => {
      this.unreleased.push(...ids);
      throw e;
    });
    this.deps.log.info({ recipients: ids.length }, 'recipients held: their destination is held');
  }

  /** What waits here for a customer paused since it was claimed goes back to the queue unattempted (paused-customers.ts). */
  private async givePausedBack(): Promise<void> {
    if (!this.paused || !this.pool.hasWaiting) return;
    await this.paused.refresh();
    const ids = this.paused.takeFrom(this.pool);
    if (ids.length === 0) return;
    await this.deps.store.releaseClaims(ids).catch((e: unknown) => {
      this.unreleased.push(...ids);
      throw e;
    });
    this.deps.log.info({ recipients: ids.length }, 'recipients given back: their customer is paused');
  }

  /**
   * limits_scope = "cluster": per destination with mail waiting, the other nodes' use is read and
   * this node's decisions written in one store transaction that no other node's for the destination
   * interleaves with (a round trip per destination and fill).
   */
  private async startShared(shared: SharedLimits, held: Held[]): Promise<void> {
    await shared.touch();
    const byDestination = new Map<string, Set<string>>();
    for (const { domain, destination } of this.known())
      byDestination.set(destination, (byDestination.get(destination) ?? new Set()).add(domain));
    for (const [destination, domains] of byDestination) {
      if (!this.pool.hasRoom) break;
      await shared.decide(destination, () =>
        this.pool.each((domain, list) => {
          if (domains.has(domain)) held.push(...this.startGroups(domain, destination, list));
        }),
      );
    }
  }

  /** Claims due recipients up to the claim batch less what waits; sandbox ones are settled at once, the rest wait by domain. */
  private async claim(): Promise<number> {
    const { store, clock, claimBatch } = this.deps;
    const room = claimBatch - this.pool.waitingCount();
    if (room <= 0) return 0;
    const rows = await store.claim(this.deps.worker, clock.now(), room);
    if (rows.length === 0) return 0;
    const sandbox: DeliveryItem[] = [];
    const sending: DeliveryItem[] = [];
    for (const item of rows) (item.message.sandbox ? sandbox : sending).push(item);
    await this.lanes.tag(sending);
    for (const item of sending) this.pool.add(item.recipient.domain, item);
    if (sandbox.length) await this.recorder.recordSandbox(sandbox);
    return rows.length;
  }

  /** Starts what the destination's lanes allow from one domain's list (taking them out of it); returns what is to be held back. */
  private startGroups(domain: string, destination: string, list: DeliveryItem[]): Held[] {
    return this.lanes.start(
      destination,
      list,
      () => this.pool.hasRoom,
      (lane, items) => this.start(domain, lane, items),
    );
  }

  /** Forgets destinations with nothing going on, when old domains are swept (memory stays bounded however many domains are sent to). */
  private forgetIdle(now: number): void {
    this.deps.throttle.forgetIdle(now);
    for (const destination of this.peakPerDestination.keys())
      if (this.deps.throttle.openConnections(destination) === 0) this.peakPerDestination.delete(destination);
  }

  /** While a connection sends: its outcomes written as they come (recorder.ts), the paused customers read again. */
  private watch(started: number): GroupWatch {
    return {
      paused: (customerId) => this.paused?.has(customerId) ?? false,
      progress: (group) => {
        this.recorder.progress(group, started);
        this.paused?.poke();
      },
    };
  }

  /** One connection's delivery: the throttle is told when it opens and how it went; the outcomes are recorded together. */
  private start(domain: string, lane: Lane, items: DeliveryItem[]): void {
    const { throttle, clock } = this.deps;
    const destination = lane.key;
    const ticket = throttle.open(destination, clock.now(), items.length);
    this.peakPerDestination.set(
      destination,
      Math.max(throttle.openConnections(destination), this.peakPerDestination.get(destination) ?? 0),
    );
    this.pool.start(domain, async () => {
      let closed = false;
      const started = clock.now();
      try {
        const group = await this.deps.deliver(domain, items, this.watch(started), lane.need);
        const delivered = group.results.filter((r) => r.outcome.kind === 'delivered').length;
        const sent = group.results.filter((r) => r.via).length;
        if (this.lanes.warms) this.pool.track(this.lanes.done(lane, items.length, sent, started));
        const change = throttle.close(ticket, { delivered, refusal: group.refusal }, clock.now());
        closed = true;
        this.shared?.publishUse(destination);
        await this.recorder.record(group, lane, change, started);
      } catch (e) {
        // A bug: the claims are released and the recipients tried again later.
        this.deps.log.error({ err: e, domain }, 'delivery group failed; releasing its claims');
        this.unreleased.push(...items.map((i) => i.recipient.id));
        await this.releaseLeftOver().catch(() => undefined);
        if (!closed) {
          throttle.close(ticket, { delivered: 0, refusal: null }, clock.now());
          this.shared?.publishUse(destination);
        }
      }
    });
  }
}
