/**
 * Failed logins counted per account and per client address in a sliding window; past the
 * limit, attempts are refused (429) until the oldest failure leaves the window. In memory: the
 * dashboard has one process, and a restart forgetting the counts costs an attacker a restart.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
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
  wait(account: string, address: string, now: number): number {
    let wait = 0;
    for (const [key, limit] of [
      [`a:${account}`, this.perAccount],
      [`i:${address}`, this.perAddress],
    ] as const) {
      const list = this.recent(key, now);
      if (list.length >= limit) wait = Math.max(wait, list[list.length - limit]! + this.windowMs - now);
    }
    return wait;
  }

  fail(account: string, address: string, now: number): void {
    for (const key of [`a:${account}`, `i:${address}`]) this.failures.set(key, [...this.recent(key, now), now]);
  }

  succeed(account: string): void {
    this.failures.delete(`a:${account}`);
  }
}
