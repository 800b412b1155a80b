import { isIP } from 'node:net';
import type { Pool } from '../config/pools.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Claimed, CustomerPools, QueuedMessage } from '../store/model.js';

// The source address of each outbound connection (docs/delivery.md, "Sending identities"): which
// pool a message goes from, and which address of it a connection binds. The one place that
// chooses, so what else decides an address (a limit per address, a warm-up's daily cap) is
// added here, in `pick`.

/** A connection's source: the pool, the address bound, the name said in EHLO from it. */
export interface SourceAddress {
  pool: string;
  ip: string;
  ehlo: string;
}

/** What the connection for some recipients needs: their pool, and the address a retry keeps (null: any of the pool's). */
export interface SourceNeed {
  pool: Pool;
  sticky: string | null;
}

export interface SourcesDeps {
  /** outbound.pools (at least one). */
  pools: readonly Pool[];
  /** outbound.default_pool, else the first. */
  defaultPool: Pool;
  /** The customers' pools by id (the store's). */
  customerPools: () => Promise<Map<number, CustomerPools>>;
  clock: Clock;
  log: Logger;
}

/** How long the customers' default pools are kept before they are read again. */
const CUSTOMERS_TTL_MS = 1000;

export class SourcePicker {
  private readonly byName: Map<string, Pool>;
  /** Every address of every pool, listed once. */
  private readonly all: readonly string[];
  /** The next address to take, per pool and address family (round robin). */
  private readonly turn = new Map<string, number>();
  private customers: { at: number; pools: Promise<Map<number, CustomerPools>> } | null = null;

  constructor(private readonly deps: SourcesDeps) {
    this.byName = new Map(deps.pools.map((p) => [p.name, p]));
    this.all = deps.pools.flatMap((p) => p.addresses.map((a) => a.ip));
  }

  /**
   * What each claimed recipient's connection needs: its message's pool, and the address a retry
   * keeps while it is in the pool. One need object per (pool, address kept), so the scheduler
   * groups recipients by identity without building a key for each at every round.
   */
  async needsOf(items: ReadonlyArray<{ message: QueuedMessage; recipient: Claimed }>): Promise<SourceNeed[]> {
    const customers = items.some((i) => i.message.pool === null) ? await this.customerPools() : undefined;
    return items.map(({ message, recipient }) => {
      const pool = this.poolOf(message, customers);
      const ip = recipient.sourceIp;
      return this.need(pool, ip !== null && pool.addresses.some((a) => a.ip === ip) ? ip : null);
    });
  }

  /** The needs made so far, by pool and the address kept. */
  private readonly needs = new Map<Pool, Map<string | null, SourceNeed>>();

  private need(pool: Pool, sticky: string | null): SourceNeed {
    let of = this.needs.get(pool);
    if (!of) this.needs.set(pool, (of = new Map()));
    let need = of.get(sticky);
    if (!need) of.set(sticky, (need = { pool, sticky }));
    return need;
  }

  /** Every configured source address, of every pool. */
  addresses(): readonly string[] {
    return this.all;
  }

  /** The pool a message goes from (`customers`: their pools, read when a message has none of its own); a name no longer configured gives the default pool, logged. */
  private poolOf(message: QueuedMessage, customers: Map<number, CustomerPools> | undefined): Pool {
    const name = message.pool ?? customers?.get(message.customerId)?.default_pool ?? null;
    if (name === null) return this.deps.defaultPool;
    const pool = this.byName.get(name);
    if (pool) return pool;
    this.deps.log.warn(
      { message_id: message.messageId, pool: name, used: this.deps.defaultPool.name },
      'the pool of a message is no longer configured (outbound.pools); it goes from the default pool',
    );
    return this.deps.defaultPool;
  }

  /**
   * The source for a connection to `address`, by its address family: the address a retry keeps
   * when it is of that family, else the pool's next address of the family in turn; null when the
   * need has none of that family (the caller skips that address of the MX host).
   */
  pick(need: SourceNeed, address: string): SourceAddress | null {
    const family = isIP(address);
    const { pool } = need;
    const of = pool.addresses.filter((a) => isIP(a.ip) === family);
    if (of.length === 0) return null;
    let chosen = need.sticky !== null ? of.find((a) => a.ip === need.sticky) : undefined;
    if (need.sticky !== null && !chosen) return null;
    if (!chosen) {
      const key = `${pool.name} ${family}`;
      const n = this.turn.get(key) ?? 0;
      this.turn.set(key, n + 1);
      chosen = of[n % of.length]!;
    }
    return { pool: pool.name, ip: chosen.ip, ehlo: chosen.ehlo };
  }

  private customerPools(): Promise<Map<number, CustomerPools>> {
    const now = this.deps.clock.now();
    if (!this.customers || now - this.customers.at > CUSTOMERS_TTL_MS) {
      const pools = this.deps.customerPools();
      // A failed read is not kept: the next group reads again.
      pools.catch(() => {
        if (this.customers?.pools === pools) this.customers = null;
      });
      this.customers = { at: now, pools };
    }
    return this.customers.pools;
  }
}
