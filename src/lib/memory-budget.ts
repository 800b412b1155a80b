/** A message (request body, DATA, inbound message shown) at least this large holds its bytes in the budget; smaller ones, nearly all, pass without a look. */
export const LARGE_MESSAGE_BYTES = 64 * 1024;

/**
 * A budget of bytes for large messages held in memory at once: API request bodies, inbound
 * DATA, inbound messages being shown. Handling a message takes a few times its size (its bytes,
 * the parsed form, the writer's copy), so without a bound a handful of 25 MiB messages at once
 * took the daemon past a gigabyte.
 *
 * Each large message opens a `Hold` and grows it as its bytes arrive (or all at once, when its
 * size is known first). A hold that does not fit waits, in the order holds were opened, and its
 * sender is held back meanwhile (TCP backpressure: its bytes are not read). The oldest open hold
 * is never made to wait, even past the limit: it is always let through, so something always
 * finishes and frees its bytes, and holds that grow piece by piece cannot block one another.
 * Memory is bounded by the limit plus one message.
 */
export class MemoryBudget {
  private used = 0;
  /** Open holds in the order they were opened (a Set keeps insertion order). */
  private readonly holds = new Set<Hold>();
  private readonly waiting: Array<{ hold: Hold; bytes: number; settle: (granted: boolean) => void }> = [];

  constructor(readonly limit: number) {}

  /** Bytes held now (status and tests). */
  get inUse(): number {
    return this.used;
  }

  /** Starts holding memory for one message; release the hold when the message is done with. */
  open(): Hold {
    const hold = new Hold(this);
    this.holds.add(hold);
    return hold;
  }

  private oldest(hold: Hold): boolean {
    return this.holds.values().next().value === hold;
  }

  /** @internal Hold.tryGrow. */
  tryTake(hold: Hold, bytes: number): boolean {
    if (!this.oldest(hold) && (this.waiting.length > 0 || this.used + bytes > this.limit)) return false;
    this.used += bytes;
    hold.held += bytes;
    return true;
  }

  /** @internal Hold.grow. */
  take(hold: Hold, bytes: number, signal?: AbortSignal): Promise<boolean> {
    if (this.tryTake(hold, bytes)) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const abort = () => this.forget(hold);
      signal?.addEventListener('abort', abort, { once: true });
      this.waiting.push({
        hold,
        bytes,
        settle: (granted) => {
          signal?.removeEventListener('abort', abort);
          resolve(granted);
        },
      });
    });
  }

  /** @internal Hold.release. */
  close(hold: Hold, bytes: number): void {
    this.holds.delete(hold);
    this.forget(hold);
    this.used = Math.max(0, this.used - bytes);
    this.admit();
  }

  /** Ends a hold's wait, if it waits, with nothing granted. */
  private forget(hold: Hold): void {
    const i = this.waiting.findIndex((w) => w.hold === hold);
    if (i === -1) return;
    this.waiting.splice(i, 1)[0]!.settle(false);
    this.admit(); // the one that left may have been what held the others back
  }

  private admit(): void {
    for (;;) {
      // The oldest hold first, wherever it waits; then the others in arrival order, while they fit.
      const i = this.waiting.findIndex((w) => this.oldest(w.hold));
      const at = i !== -1 ? i : this.waiting.length > 0 && this.used + this.waiting[0]!.bytes <= this.limit ? 0 : -1;
      if (at === -1) return;
      const [next] = this.waiting.splice(at, 1);
      this.used += next!.bytes;
      next!.hold.held += next!.bytes; // counted on the hold now, before anything else can release it
      next!.settle(true);
    }
  }
}

/** Memory held for one message. */
export class Hold {
  /** Bytes granted to this hold (kept by the budget). */
  held = 0;
  private released = false;

  constructor(private readonly budget: MemoryBudget) {}

  /** Takes `bytes` more if they fit now. */
  tryGrow(bytes: number): boolean {
    return !this.released && this.budget.tryTake(this, bytes);
  }

  /**
   * Takes `bytes` more as soon as they fit, in arrival order; false if `signal` aborts first,
   * or the hold is released while it waits.
   */
  grow(bytes: number, signal?: AbortSignal): Promise<boolean> {
    return this.released ? Promise.resolve(false) : this.budget.take(this, bytes, signal);
  }

  /** Gives everything back; the hold is done. Safe to call more than once. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.close(this, this.held);
    this.held = 0;
  }
}
