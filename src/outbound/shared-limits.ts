// outbound.limits_scope = "cluster": each destination's limits are decided against the other nodes'
// use of it, shared through the store (docs/delivery.md). The scheduler decides what to start; this
// is how a node takes part: it says it is alive, makes each decision under the destination's lock
// with the others' use in hand, and writes its own use back after a connection ends.

import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { DeliveryStore } from '../store/store.js';
import type { Throttle } from './throttle.js';

/** How often a node sharing destination limits says it is alive (its use counts for a minute after). */
const TOUCH_MS = 10_000;

export interface SharedLimitsDeps {
  store: DeliveryStore;
  clock: Clock;
  log: Logger;
  throttle: Throttle;
}

/** One node's part in destination limits shared by the nodes. */
export class SharedLimits {
  /** When this node last said it is alive to the nodes sharing destination limits (monotonic ms). */
  private touchedAt = -Infinity;

  /** `node`: this node's id (unique to the process); `track`: work the scheduler waits for before it stops. */
  constructor(
    private readonly node: string,
    private readonly deps: SharedLimitsDeps,
    private readonly track: (work: Promise<void>) => void,
  ) {}

  /** Says this node is alive, at most every TOUCH_MS. */
  async touch(): Promise<void> {
    if (performance.now() - this.touchedAt <= TOUCH_MS) return;
    await this.deps.store.touchUse(this.node);
    this.touchedAt = performance.now();
  }

  /**
   * One decision for a destination: the other nodes' use is read and this node's written in one
   * store transaction that no other node's for the destination interleaves with; `start` starts
   * what the destination's limits, so shared, allow.
   */
  decide(destination: string, start: () => void): Promise<void> {
    const { throttle, clock } = this.deps;
    return this.deps.store.shareDestination(destination, this.node, (others) => {
      throttle.share(destination, others, others.throttle);
      start();
      return throttle.own(destination, clock.now());
    });
  }

  /**
   * This node's use of a destination after a connection ended. Written under the destination's
   * lock like a decision, and read from the throttle once the lock is held: a write that waited
   * cannot put back a count older than a decision made meanwhile.
   */
  publishUse(destination: string): void {
    this.track(
      this.decide(destination, () => undefined).catch((e: unknown) =>
        this.deps.log.warn({ err: e }, 'destination use not shared'),
      ),
    );
  }
}
