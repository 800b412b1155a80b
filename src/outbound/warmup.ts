// The warm-up ledger (docs/delivery.md, "Warm-up"): how many messages each source address may
// still hand to connections today, per destination, under its warm-up cap. The scheduler asks it
// before a connection from a warming address takes its messages, and gives back what the
// connection did not try; the counts are the store's, so every node on one PostgreSQL shares them.

import type { Pool } from '../config/pools.js';
import { nextUtcMidnight, type WarmupAddressStatus, warmupCap, warmupDayOf, warmupStatus } from '../domain/warmup.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Store } from '../store/store.js';

export interface WarmupLedgerDeps {
  store: Pick<Store, 'warmup'>;
  /** The time when a method is given none. */
  clock: Clock;
  /** outbound.warmup_schedule. */
  schedule: readonly number[];
  /** outbound.pools: each address's warmup_start. */
  pools: readonly Pool[];
  log: Logger;
}

export class WarmupLedger {
  /** Each address's warmup_start; an address listed in two pools keeps its first listing's. */
  private readonly starts = new Map<string, string | undefined>();
  /** "day ip destination" of the caps reached today and logged, so each is said once a day. */
  private readonly reached = new Set<string>();
  private reachedDay = '';

  constructor(private readonly deps: WarmupLedgerDeps) {
    for (const p of deps.pools)
      for (const a of p.addresses) if (!this.starts.has(a.ip)) this.starts.set(a.ip, a.warmup_start);
  }

  /** The cap of ip today (null: not warming, or an address not in the pools). */
  capOf(ip: string, now: number = this.deps.clock.now()): number | null {
    return warmupCap(this.deps.schedule, this.starts.get(ip), now);
  }

  /**
   * Reserves up to n sends from each ip to each destination today; returns what each was granted
   * (0..n), in the wants' order. An ip that is not warming is granted n without a store call; the
   * others' in one store transaction, shared across nodes through the store.
   */
  async reserve(
    wants: ReadonlyArray<{ ip: string; destination: string; n: number }>,
    now: number = this.deps.clock.now(),
  ): Promise<number[]> {
    const grants = wants.map((w) => Math.max(0, w.n));
    const capped: Array<{ i: number; ip: string; destination: string; n: number; cap: number }> = [];
    wants.forEach((w, i) => {
      const cap = this.capOf(w.ip, now);
      if (cap !== null && w.n > 0) capped.push({ i, ip: w.ip, destination: w.destination, n: w.n, cap });
    });
    if (capped.length === 0) return grants;
    const day = warmupDayOf(now);
    const got = await this.deps.store.warmup.reserve(
      day,
      capped.map(({ ip, destination, n, cap }) => ({ ip, destination, n, cap })),
    );
    capped.forEach((c, k) => {
      grants[c.i] = got[k] ?? 0;
      if (grants[c.i]! < c.n) this.saidReached(day, c);
    });
    return grants;
  }

  /** Gives back sends reserved (on the day of `reservedAt`) but not made; nothing for an ip that was not warming then. */
  async giveBack(ip: string, destination: string, n: number, reservedAt: number): Promise<void> {
    if (n <= 0 || this.capOf(ip, reservedAt) === null) return;
    await this.deps.store.warmup.giveBack(warmupDayOf(reservedAt), ip, destination, n);
  }

  /** When a day's cap next renews (the next UTC midnight after now). */
  nextDay(now: number = this.deps.clock.now()): number {
    return nextUtcMidnight(now);
  }

  /** The log line of a cap reached, once a day per address and destination. */
  private saidReached(day: string, c: { ip: string; destination: string; cap: number }): void {
    if (day !== this.reachedDay) {
      this.reached.clear();
      this.reachedDay = day;
    }
    const key = `${c.ip} ${c.destination}`;
    if (this.reached.has(key)) return;
    this.reached.add(key);
    this.deps.log.info(
      { source_ip: c.ip, destination: c.destination, cap: c.cap, day },
      'warm-up: the address has reached its cap for this destination today',
    );
  }
}

/**
 * Each configured address with its warm-up day, today's cap per destination and today's use
 * (summed per address by the store), for `posthaste status` and the dashboard's overview.
 */
export async function warmupReport(
  store: Pick<Store, 'warmup'>,
  pools: readonly Pool[],
  schedule: readonly number[],
  now: number,
): Promise<WarmupAddressStatus[]> {
  if (pools.length === 0) return [];
  return warmupStatus(pools, schedule, await store.warmup.usage(warmupDayOf(now)), now);
}
