/**
 * The loop the delivery scheduler and the webhook dispatcher share: run a step, then sleep until
 * the poll interval passes, `wake()` is called, or the signal aborts.
 */
export class PollLoop {
  private wakeFn: (() => void) | null = null;

  wake(): void {
    this.wakeFn?.();
  }

  async run(signal: AbortSignal, intervalMs: number, step: () => void, onError: (e: unknown) => void): Promise<void> {
    const abort = () => this.wake();
    signal.addEventListener('abort', abort, { once: true });
    while (!signal.aborted) {
      try {
        step();
      } catch (e) {
        onError(e);
      }
      if (signal.aborted) break;
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
