import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { DeliveryStore } from '../store/store.js';
import type { Throttle } from './throttle.js';

// What an operator did that the recipients waiting on a node must see before they start
// (docs/operations.md, "The queue"): the held destinations (a hold made meanwhile holds what
// waits; a release frees it), and the retries of destinations paused here (a retry lifts a pause
// set before it, on every node, at its next claim of the destination's recipients).

export interface OperatorViewDeps {
  store: Pick<DeliveryStore, 'heldDestinations' | 'retriedAt'>;
  throttle: Throttle;
  clock: Clock;
  log: Logger;
  /** Every throttle key of a destination (outbound/lanes.ts: one per source address with pools). */
  keysOf: (destination: string) => string[];
}

export class OperatorView {
  /** The destinations an operator holds, as last read. */
  private held = new Set<string>();

  constructor(private readonly deps: OperatorViewDeps) {}

  /** Whether an operator holds the destination (as last read). */
  holds(destination: string): boolean {
    return this.held.has(destination);
  }

  /** Whether an operator holds any destination. */
  get holdsAny(): boolean {
    return this.held.size > 0;
  }

  /** Reads it again, for the destinations that have recipients waiting here. */
  async read(waiting: ReadonlySet<string>): Promise<void> {
    const { store, throttle, clock, keysOf } = this.deps;
    this.held = new Set(await store.heldDestinations());
    const now = clock.now();
    const paused = [...waiting].filter((d) => keysOf(d).some((k) => throttle.isPaused(k, now)));
    if (paused.length === 0) return;
    for (const [destination, at] of await store.retriedAt(paused))
      for (const key of keysOf(destination))
        if (throttle.lift(key, at, now))
          this.deps.log.info({ destination: key }, 'pause lifted: the destination was retried');
  }
}
