import type { ApiKeyInfo, CustomerPools, SendCommit, SendInput, SendingDomain } from './model.js';
import type { ReputationStore, Standing } from './reputation-store.js';
import type { CustomerStore, DomainStore, KeyStore, MessageStore } from './store.js';

/**
 * Keys and sending domains cached in memory for the API. A checked lookup first reads
 * `auth_epoch` and drops the cache when it moved, so a revocation is refused on the very next
 * request, on every node. The send path looks up unchecked (no read before it) and hands `epoch`
 * to the commit, which verifies the key and the domain inside the accepting transaction (SQLite
 * when the epoch moved; PostgreSQL always, in the statement that inserts) and answers the epoch it
 * saw (store/model.ts, SendInput): the same guarantee, one read fewer per request, and no window
 * between the check and the commit.
 *
 * A lookup that went to the store while the epoch moved under it is not remembered: what it read
 * may predate the change.
 *
 * The send path's steps are `sendingDomain` and `acceptSend` below; the API's send endpoints take
 * them through api/send-gate.ts, SMTP submission through submission/accept.ts.
 */
export class AuthCache {
  private current = '';
  /** Moves each time the cache is dropped: a lookup remembers its answer only if it has not. */
  private generation = 0;
  private keys = new Map<string, ApiKeyInfo | undefined>();
  private domains = new Map<string, SendingDomain | undefined>();
  /** Each customer's pause (null: not paused), as the send path asks (a pause or resume moves the epoch). */
  private pauses = new Map<number, Standing | null>();
  /** Every customer's pools that are not the default (a change of pools moves the epoch), read whole: they are few. */
  private pools: Map<number, CustomerPools> | null = null;
  private static readonly MAX = 10_000;

  constructor(
    private readonly store: {
      keys: KeyStore;
      domains: DomainStore;
      reputation?: ReputationStore;
      customers?: Pick<CustomerStore, 'pools'>;
    },
  ) {}

  /** The epoch the cached entries are at least as new as (read once before the first lookup). */
  get epoch(): string {
    return this.current;
  }

  /** Reads the epoch now; drops the cache if it moved. */
  async refresh(): Promise<void> {
    this.observe(await this.store.keys.authEpoch());
  }

  /** An epoch read elsewhere (the send path's transaction): drops the cache if it moved. */
  observe(epoch: string): void {
    if (epoch !== this.current) {
      this.current = epoch;
      this.generation++;
      this.keys.clear();
      this.domains.clear();
      this.pauses.clear();
      this.pools = null;
    }
  }

  /** Same answer as the store's authenticate (constant-time compare included), remembered per key text. */
  async key(presented: string, checked = true): Promise<ApiKeyInfo | undefined> {
    await this.validate(checked);
    if (this.keys.has(presented)) return this.keys.get(presented);
    const at = this.generation;
    const info = await this.store.keys.authenticate(presented);
    // Only well-formed, known keys are remembered: garbage cannot grow the map.
    if (info && at === this.generation && this.keys.size < AuthCache.MAX) this.keys.set(presented, info);
    return info;
  }

  async domain(name: string, checked = true): Promise<SendingDomain | undefined> {
    await this.validate(checked);
    if (this.domains.has(name)) return this.domains.get(name);
    const at = this.generation;
    const d = await this.store.domains.findSending(name);
    if (d && at === this.generation && this.domains.size < AuthCache.MAX) this.domains.set(name, d);
    return d;
  }

  /**
   * The sender domain a send names, from the cache; read again (checked) when the cached entry
   * would refuse the send, so a refusal never comes from a stale cache. The caller refuses a
   * domain that is missing, another customer's or unverified.
   */
  async sendingDomain(customerId: number, name: string): Promise<SendingDomain | undefined> {
    const cached = await this.domain(name, false);
    if (cached !== undefined && cached.customer_id === customerId && cached.verified_at !== null) return cached;
    return this.domain(name, true);
  }

  /**
   * The customer's pause if it is paused, from the cache; read again (checked) when the cached
   * entry would refuse the send, so a refusal never comes from a stale cache.
   */
  async pause(customerId: number): Promise<Standing | undefined> {
    if (!this.store.reputation || !(await this.standing(customerId, false))) return undefined;
    return (await this.standing(customerId, true)) ?? undefined;
  }

  /**
   * Whether this customer may choose `pool` for a send (its default pool or one of its allowed
   * pools), and the pools it may choose: checked (the epoch read first; a change of pools moves
   * it), so a send admitted after a change obeys it. Only a send that names a pool pays the read.
   */
  async mayChoosePool(customerId: number, pool: string): Promise<{ allowed: boolean; choices: string[] }> {
    const choices = choicesOf(await this.customerPools(), customerId);
    return { allowed: choices.includes(pool), choices };
  }

  private async customerPools(): Promise<Map<number, CustomerPools>> {
    await this.validate(true);
    if (this.pools) return this.pools;
    if (!this.store.customers) return new Map();
    const at = this.generation;
    const pools = await this.store.customers.pools();
    if (at === this.generation) this.pools = pools;
    return pools;
  }

  private async standing(customerId: number, checked: boolean): Promise<Standing | null> {
    await this.validate(checked);
    if (this.pauses.has(customerId)) return this.pauses.get(customerId)!;
    const at = this.generation;
    const s = await this.store.reputation!.standing(customerId);
    const paused = s.paused_at !== null ? s : null;
    if (at === this.generation && this.pauses.size < AuthCache.MAX) this.pauses.set(customerId, paused);
    return paused;
  }

  /** Checked: the epoch read now. Unchecked: read once, so no entry predates the epoch handed on with it. */
  private async validate(checked: boolean): Promise<void> {
    if (checked || this.current === '') await this.refresh();
  }
}

/** The pools a customer may choose per send: its allowed pools and its default. */
function choicesOf(pools: Map<number, CustomerPools>, customerId: number): string[] {
  const p = pools.get(customerId);
  if (!p) return [];
  return p.default_pool !== null && !p.allowed_pools.includes(p.default_pool)
    ? [...p.allowed_pools, p.default_pool]
    : p.allowed_pools;
}

/**
 * The send path's commit (docs/architecture.md, "Keys"): the store's accept, handed in
 * `input.authEpoch` the epoch the cached key and domain were read at, checks them again in the
 * transaction that stores the message and answers the epoch it saw; the cache is dropped when that
 * moved, so the next lookup reads the store.
 */
export async function acceptSend(auth: AuthCache, messages: MessageStore, input: SendInput): Promise<SendCommit> {
  const result = await messages.accept(input);
  auth.observe(result.authEpoch);
  return result;
}
