import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../lib/logger.js';
import type { NodeInfo, NodeView } from '../store/model.js';
import type { NodeStore } from '../store/store.js';

export interface NodeDeps {
  store: NodeStore;
  info: NodeInfo;
  /** The process holds the store alone (SQLite's lock): rows a previous run left are removed at start. */
  exclusive: boolean;
  log: Logger;
}

/**
 * This process as a node of the cluster (docs/cluster.md). At start it registers (a fresh id, the
 * worker its claims carry); then it heartbeats every sixth of its lease and, like every node,
 * releases dead nodes' claims every fifth of it. It may claim only while its last heartbeat
 * that succeeded was sent less than half its lease ago: a node cut off from the store stops
 * claiming well before the others find it dead and take its work over. Stopping cleanly, it
 * releases its claims and removes its row.
 *
 * It judges others dead only once it has itself heartbeaten without a failure for a whole lease:
 * after the database was away (restarted, or out of reach of every node), every node's heartbeat
 * is old, and the first node back must not take the claims of nodes that are alive and about to
 * heartbeat again. So a node releases dead nodes' claims a lease after it starts, or after its
 * heartbeat comes back; on SQLite, which one process holds alone, at once.
 */
export class ClusterNode {
  /** performance.now() when the last heartbeat that succeeded was sent. */
  private lastOk = Number.NEGATIVE_INFINITY;
  /** performance.now() since when every heartbeat has succeeded. */
  private aliveSince = Number.POSITIVE_INFINITY;
  private failing = false;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private releaseTimer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;

  private readonly aliveListeners: Array<() => void> = [];

  constructor(private readonly deps: NodeDeps) {}

  /**
   * `fn` is called when the heartbeat succeeds again after failing (claiming may resume), and
   * when dead nodes' claims were released (there is work to claim). The loops subscribe once
   * they exist; before that, nothing is lost: they claim when they start.
   */
  onAlive(fn: () => void): void {
    this.aliveListeners.push(fn);
  }

  private alive(): void {
    for (const fn of this.aliveListeners) fn();
  }

  get id(): string {
    return this.deps.info.id;
  }

  get leaseMs(): number {
    return this.deps.info.leaseMs;
  }

  /**
   * Registers, releases dead nodes' claims (before this node claims anything), and starts the
   * loops. Throws NodeNameTaken when a live node goes by this node's name (registerOrWait).
   */
  async start(): Promise<void> {
    await this.registerOrWait();
    const t0 = performance.now();
    this.lastOk = t0;
    this.aliveSince = this.deps.exclusive ? Number.NEGATIVE_INFINITY : t0;
    this.deps.log.info({ node_id: this.id, lease_ms: this.leaseMs }, 'node registered');
    if (this.deps.exclusive) await this.release();
    this.heartbeatTimer = this.every(Math.max(100, Math.floor(this.leaseMs / 6)), () => this.heartbeat());
    this.releaseTimer = this.every(Math.max(100, Math.floor(this.leaseMs / 5)), () =>
      this.release().catch((e: unknown) =>
        this.deps.log.warn({ err: e }, 'releasing dead nodes’ claims failed; trying again'),
      ),
    );
  }

  /**
   * Registers under this node's name. While a node whose heartbeat is within its lease holds the
   * name, watches that heartbeat rather than refusing at once: a process killed a moment ago (a
   * restart under systemd after a crash) still looks alive until its lease runs out, and refusing
   * it then would exhaust systemd's start limit. A heartbeat that moves, or another node taking
   * the name meanwhile, is a live node: refused (NodeNameTaken). One that stays still gives the
   * name up when its lease runs out, and this node registers then.
   */
  private async registerOrWait(): Promise<void> {
    const first = await this.deps.store.register(this.deps.info, this.deps.exclusive);
    if (!first) return;
    this.deps.log.warn(
      { holder_id: first.id, holder_pid: first.pid, last_heartbeat: first.heartbeat_at },
      'a node of this name was alive a moment ago: waiting to see whether it still heartbeats (a crashed one gives its name up when its lease runs out)',
    );
    const giveUpAt = performance.now() + first.lease_ms + 2_000;
    const step = Math.max(100, Math.min(1_000, Math.floor(first.lease_ms / 12)));
    for (;;) {
      await sleep(step);
      const holder = await this.deps.store.register(this.deps.info, this.deps.exclusive);
      if (!holder) return;
      const moved = holder.id !== first.id || holder.heartbeat_at !== first.heartbeat_at;
      if (moved || performance.now() > giveUpAt) throw new NodeNameTaken(this.deps.info.name, holder);
    }
  }

  /** Whether this node may claim work now (its heartbeat is recent). */
  canClaim(): boolean {
    return !this.stopped && performance.now() - this.lastOk < this.leaseMs / 2;
  }

  /** Stops the loops, then releases this node's claims and removes its row (what the store could not take is released by the others once the lease runs out). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    if (this.releaseTimer) clearTimeout(this.releaseTimer);
    await this.running.catch(() => undefined);
    try {
      const left = await withTimeout(this.deps.store.leave(this.id), 5_000);
      if (left.recipients || left.webhook_deliveries) this.deps.log.info({ ...left }, 'node left; its claims released');
    } catch (e) {
      this.deps.log.warn(
        { err: e },
        'node could not leave cleanly; the other nodes release its claims once its lease runs out',
      );
    }
  }

  /**
   * Runs fn every `ms` (one at a time, never overlapping), until stopped. A run that has not
   * finished in half the lease is given up on (it counts as failed: a heartbeat that hangs on a
   * broken connection must not stop the next one).
   */
  private every(ms: number, fn: () => Promise<unknown>): NodeJS.Timeout {
    const timer = setTimeout(() => {
      if (this.stopped) return;
      this.running = withTimeout(fn(), this.leaseMs / 2)
        .catch(() => undefined)
        .finally(() => {
          if (!this.stopped) timer.refresh();
        });
    }, ms);
    timer.unref();
    return timer;
  }

  private async heartbeat(): Promise<void> {
    const t0 = performance.now();
    try {
      const kept = await withTimeout(this.deps.store.heartbeat(this.deps.info), this.leaseMs / 2);
      this.lastOk = t0;
      if (!kept)
        this.deps.log.warn(
          { node_id: this.id },
          'this node had been found dead (no heartbeat for longer than its lease) and its claims released: what it was delivering then may be delivered twice',
        );
      if (this.failing) {
        this.failing = false;
        this.aliveSince = t0;
        this.deps.log.info('heartbeat succeeded again; claiming resumes');
        this.alive();
      }
    } catch (e) {
      if (!this.failing)
        this.deps.log.warn({ err: e }, 'heartbeat failed: this node claims nothing new until one succeeds');
      this.failing = true;
    }
  }

  private async release(): Promise<void> {
    if (performance.now() - this.aliveSince < this.leaseMs) return;
    const r = await this.deps.store.releaseDead();
    if (r.recipients || r.webhook_deliveries || r.nodes.length)
      this.deps.log.warn(
        { dead_nodes: r.nodes, recipients: r.recipients, webhook_deliveries: r.webhook_deliveries },
        'released the claims of dead nodes',
      );
    if (r.recipients || r.webhook_deliveries) this.alive();
  }
}

/**
 * A node did not start: a live node (its heartbeat within its lease) already goes by its name.
 * The message names that node and when it was last heard of; a node whose process died gives its
 * name up once its lease has run out, so a restart after a crash goes ahead then.
 */
export class NodeNameTaken extends Error {
  constructor(
    name: string,
    readonly holder: NodeView,
  ) {
    super(
      `server.node_name "${name}" is in use by a live node: ${holder.name} (id ${holder.id}, pid ${holder.pid}), started ${holder.started_at}, last heartbeat ${holder.heartbeat_at}; ` +
        `two nodes cannot share a name: give this one a server.node_name of its own, or stop that one (docs/cluster.md). ` +
        `A node whose process died gives its name up ${Math.round(holder.lease_ms / 1000)} s (its lease) after its last heartbeat, and a node starting meanwhile waits for that.`,
    );
  }
}

/** The promise, or a rejection once `ms` have passed without it settling. */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the store in ${Math.round(ms)} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
