/**
 * The runner both background loops share (outbound/scheduler.ts by recipient domain,
 * webhooks/dispatcher.ts by endpoint): work waiting per key, tasks running within a global limit,
 * the set of promises to wait for at stop, and the poll loop that fills it.
 *
 * The owner decides what runs and when: `each` hands it every key's waiting list to take from (a
 * list left empty is dropped), and `start` runs one task with the bookkeeping (counts up, tracked,
 * counts down and `onFinish` when it settles). States: running (the poll loop calls the owner's
 * fill), stopping (the signal aborted: nothing new starts, tasks in flight finish), stopped (`run`
 * has returned; what still waits is the owner's to release with `takeAll`).
 */
export class KeyedPool<T> {
  /** Work waiting, by key, oldest first; a key with nothing waiting has no entry. */
  private readonly waiting = new Map<string, T[]>();
  /** Tasks running, by key (absent: none). */
  private readonly runningByKey = new Map<string, number>();
  /** Tasks running and other work `track`ed: what `drain` and `run` wait for. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Tasks running, all keys. */
  private runningNow = 0;
  /** Set when the run's signal aborts; nothing starts after it. */
  private stoppingNow = false;
  private readonly loop = new PollLoop();
  /** The fill running (or the last one, settled): the next waits for it. */
  private filling: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly opts: {
      /** Tasks running at once, all keys together. */
      concurrency: number;
      /** A task settled and its counts are down: the owner may start the next. */
      onFinish: (key: string) => void;
      /** A task rejected (a bug: tasks record their own failures); it still counts as finished. */
      onError: (e: unknown, key: string) => void;
    },
  ) {}

  get stopping(): boolean {
    return this.stoppingNow;
  }

  /** Tasks running, all keys. */
  get running(): number {
    return this.runningNow;
  }

  /** Whether the global limit lets another task start. */
  get hasRoom(): boolean {
    return !this.stoppingNow && this.runningNow < this.opts.concurrency;
  }

  runningFor(key: string): number {
    return this.runningByKey.get(key) ?? 0;
  }

  waitingFor(key: string): number {
    return this.waiting.get(key)?.length ?? 0;
  }

  /** Items waiting, all keys. */
  waitingCount(): number {
    let n = 0;
    for (const list of this.waiting.values()) n += list.length;
    return n;
  }

  /** Whether anything waits (O(1): empty lists are never kept). */
  get hasWaiting(): boolean {
    return this.waiting.size > 0;
  }

  add(key: string, item: T): void {
    const list = this.waiting.get(key);
    if (list) list.push(item);
    else this.waiting.set(key, [item]);
  }

  /** Hands each key's waiting list to `take`, which removes what it starts or gives back; emptied lists are dropped. */
  each(take: (key: string, list: T[]) => void): void {
    for (const [key, list] of this.waiting) {
      take(key, list);
      if (list.length === 0) this.waiting.delete(key);
    }
  }

  /** Everything waiting, taken out (to give back to the store at stop). */
  takeAll(): T[] {
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    return all;
  }

  /** Runs a task for `key`, counted against the limits until it settles. The task records its own failures. */
  start(key: string, task: () => Promise<void>): void {
    this.runningNow++;
    this.runningByKey.set(key, this.runningFor(key) + 1);
    let work: Promise<void>;
    try {
      work = task();
    } catch (e) {
      work = Promise.reject(e);
    }
    const p = work
      .catch((e: unknown) => this.opts.onError(e, key))
      .finally(() => {
        this.runningNow--;
        const n = this.runningFor(key) - 1;
        if (n > 0) this.runningByKey.set(key, n);
        else this.runningByKey.delete(key);
        this.inFlight.delete(p);
        this.opts.onFinish(key);
      });
    this.inFlight.add(p);
  }

  /** Other work the owner has under way (a lookup) that `drain` and `run` wait for; not counted against the limits. */
  track(work: Promise<void>): void {
    const p = work.finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  /** Runs `fill` now. */
  wake(): void {
    this.loop.wake();
  }

  /**
   * Calls `fill` every `intervalMs` and on `wake` until the signal aborts; then starts nothing
   * more and resolves once every task in flight has settled. One fill at a time: a wake while one
   * runs makes the next start as soon as it is done.
   */
  async run(
    signal: AbortSignal,
    intervalMs: number,
    fill: () => unknown,
    onError: (e: unknown) => void,
  ): Promise<void> {
    await this.loop.run(signal, intervalMs, () => this.exclusive(fill), onError);
    await this.stop();
  }

  /** Marks the pool stopping and waits for what is in flight (a stop without `run`). */
  async stop(): Promise<void> {
    this.stoppingNow = true;
    await Promise.all(this.inFlight);
  }

  /**
   * Runs `fill` (which returns how much it took or started) until it finds nothing and nothing is
   * in flight, waiting for a task between rounds; then `settle` (what the owner still has to write)
   * and one more look. Tests use it with a manual clock: everything due now is done when it resolves.
   */
  async drain(fill: () => number | Promise<number>, settle?: () => Promise<void>): Promise<void> {
    for (;;) {
      if ((await this.exclusive(fill)) === 0 && this.inFlight.size === 0) {
        if (!settle) return;
        await settle();
        if ((await this.exclusive(fill)) === 0 && this.inFlight.size === 0) return;
      }
      if (this.inFlight.size > 0) await Promise.race(this.inFlight);
    }
  }

  /**
   * Runs `fill`, never two at once: it claims from the store and adds to the waiting lists across
   * awaits, and two interleaved would claim twice the room. A call while one runs waits for it and
   * then runs its own.
   */
  exclusive<R>(fill: () => R | Promise<R>): Promise<R> {
    const run = this.filling.then(fill);
    this.filling = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }
}

/**
 * A step run every interval and on `wake()`, until the signal aborts (the poll loop of a
 * `KeyedPool`).
 */
class PollLoop {
  private wakeFn: (() => void) | null = null;
  /** A wake that came while the step ran: the next step starts without waiting. */
  private woken = false;

  wake(): void {
    if (this.wakeFn) this.wakeFn();
    else this.woken = true;
  }

  async run(
    signal: AbortSignal,
    intervalMs: number,
    step: () => unknown,
    onError: (e: unknown) => void,
  ): Promise<void> {
    const abort = () => this.wake();
    signal.addEventListener('abort', abort, { once: true });
    while (!signal.aborted) {
      this.woken = false;
      try {
        await step();
      } catch (e) {
        onError(e);
      }
      if (signal.aborted) break;
      if (this.woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        this.wakeFn = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeFn = null;
    }
    signal.removeEventListener('abort', abort);
  }
}
