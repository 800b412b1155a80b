/** The one source of time. Injected everywhere so retries and windows are tested without sleeping. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private t: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
  set(ms: number): void {
    this.t = ms;
  }
}

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Runs `run` every `intervalMs` (an unref'd timer: it keeps no process alive), never two runs at
 * once (a tick while one is under way is skipped); `stop` clears the timer and waits for the run
 * under way. `run` handles its own failures.
 */
export function every(intervalMs: number, run: () => Promise<void>): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= run().finally(() => {
      running = undefined;
    });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
