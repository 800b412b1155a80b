import type { Clock } from '../lib/clock.js';
import type { KeyedPool } from '../lib/keyed-pool.js';
import type { Logger } from '../lib/logger.js';
import type { DeliveryItem } from './deliver.js';

/** How long a read of the paused customers stands before the next may be made. */
const READ_EVERY_MS = 250;

/**
 * The customers whose sending is paused (docs/operations.md, "Reputation"), as the delivery loop
 * last read them: read at most every 250 ms, and only while the scheduler has mail of its own
 * waiting or a connection sending, so a delivery asks `has` before each message without a store
 * read. What waits for a paused customer goes back to the queue unattempted (its claim released,
 * its row untouched; the claim skips it while the customer is paused); what a connection has
 * not sent yet is given back the same way (deliver.ts).
 */
export class PausedCustomers {
  private ids = new Set<number>();
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      read: () => Promise<number[]>;
      clock: Clock;
      log: Logger;
      /** Runs a read in the background (the scheduler's pool waits for it at stop). */
      track: (work: Promise<void>) => void;
    },
  ) {}

  has(customerId: number): boolean {
    return this.ids.has(customerId);
  }

  /** Reads them again if the last read is 250 ms old (one read at a time); resolves once read, or at once. */
  refresh(): Promise<void> {
    if (this.reading) return this.reading;
    const now = this.deps.clock.now();
    if (now - this.readAt < READ_EVERY_MS) return Promise.resolve();
    this.readAt = now;
    this.reading = this.deps
      .read()
      .then((ids) => {
        this.ids = new Set(ids);
      })
      .finally(() => {
        this.reading = null;
      });
    return this.reading;
  }

  /** `refresh` in the background, while a connection sends; a failed read is logged and the last one stands. */
  poke(): void {
    if (this.reading || this.deps.clock.now() - this.readAt < READ_EVERY_MS) return;
    this.deps.track(this.refresh().catch((e: unknown) => this.deps.log.warn({ err: e }, 'paused customers not read')));
  }

  /** Takes the paused customers' items out of the pool's waiting lists; answers their recipients' ids. */
  takeFrom(pool: KeyedPool<DeliveryItem>): number[] {
    const ids: number[] = [];
    if (this.ids.size === 0) return ids;
    pool.each((_domain, list) => {
      for (let i = list.length - 1; i >= 0; i--)
        if (this.ids.has(list[i]!.message.customerId)) ids.push(list.splice(i, 1)[0]!.recipient.id);
    });
    return ids;
  }
}
