import type { LoginFailureStore } from '../store/store.js';

/**
 * Failed logins counted per account and per client address in a sliding window; past the
 * limit, attempts are refused (429) until the oldest failure leaves the window. With the store's
 * shared failures (PostgreSQL, where several nodes serve the dashboard behind one name) every
 * node counts every node's failures: a load balancer does not multiply an attacker's attempts.
 * Without (SQLite: the dashboard has one process) they are counted in memory, and a restart
 * forgetting the counts costs an attacker a restart.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly shared?: LoginFailureStore,
    private readonly windowMs = 15 * 60_000,
    private readonly perAccount = 5,
    private readonly perAddress = 20,
  ) {}

  private recent(key: string, now: number): number[] {
    const list = (this.failures.get(key) ?? []).filter((t) => now - t < this.windowMs);
    if (list.length) this.failures.set(key, list);
    else this.failures.delete(key);
    return list;
  }

  /** Milliseconds to wait before the next attempt for this account from this address; 0: go ahead. */
  async wait(account: string, address: string, now: number): Promise<number> {
    const keys = [
      [`a:${account}`, this.perAccount],
      [`i:${address}`, this.perAddress],
    ] as const;
    const rows = this.shared
      ? await this.shared.recent(
          keys.map(([k]) => k),
          now - this.windowMs,
        )
      : undefined;
    let wait = 0;
    for (const [key, limit] of keys) {
      const list = rows ? rows.filter((r) => r.key === key).map((r) => r.at) : this.recent(key, now);
      if (list.length >= limit) wait = Math.max(wait, list[list.length - limit]! + this.windowMs - now);
    }
    return wait;
  }

  async fail(account: string, address: string, now: number): Promise<void> {
    const keys = [`a:${account}`, `i:${address}`];
    if (this.shared) await this.shared.record(keys, now, this.windowMs);
    else for (const key of keys) this.failures.set(key, [...this.recent(key, now), now]);
  }

  async succeed(account: string): Promise<void> {
    if (this.shared) await this.shared.clear(`a:${account}`);
    else this.failures.delete(`a:${account}`);
  }
}
