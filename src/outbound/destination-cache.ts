import type { Clock } from '../lib/clock.js';

/** How long a domain's destination is trusted before it is looked up again (the MX cache's time). */
const DESTINATION_TTL_MS = 60_000;
/** Known domains past which old entries are swept. */
const SWEEP_AT = 10_000;

export interface DestinationCacheDeps {
  /** The destination a domain's mail goes to (domain/destinations.ts); the domain itself when it cannot be told. */
  lookup: (domain: string) => Promise<string>;
  clock: Clock;
  /** Runs a lookup in the background (the scheduler's pool waits for it at stop). */
  track: (work: Promise<void>) => void;
  /** A lookup finished: the domain's items can now be started. */
  onResolved: () => void;
  /** A domain's destination found (not the domain itself) and not the one known before: kept in the store for selections by destination. */
  onLearned?: (domain: string, destination: string) => void;
  /** Old entries were swept (more than SWEEP_AT domains known): the caller forgets what is idle too. */
  onSweep: (now: number) => void;
}

/**
 * Each recipient domain's destination, as the scheduler groups by it: looked up in the
 * background the first time (the domain's items wait a round), trusted for DESTINATION_TTL_MS,
 * refreshed in the background when old, and swept so memory stays bounded however many domains
 * are sent to.
 */
export class DestinationCache {
  private readonly known = new Map<string, { destination: string; until: number }>();
  private readonly resolving = new Set<string>();

  constructor(private readonly deps: DestinationCacheDeps) {}

  /** A domain's destination if known (refreshed in the background when old); undefined while it is first looked up. */
  get(domain: string): string | undefined {
    const known = this.known.get(domain);
    if (known && known.until > this.deps.clock.now()) return known.destination;
    if (!this.resolving.has(domain)) {
      this.resolving.add(domain);
      this.deps.track(
        this.deps
          .lookup(domain)
          .catch(() => domain)
          .then((destination) => {
            const now = this.deps.clock.now();
            if (destination !== domain && destination !== known?.destination)
              this.deps.onLearned?.(domain, destination);
            this.known.set(domain, { destination, until: now + DESTINATION_TTL_MS });
            if (this.known.size > SWEEP_AT) this.sweep(now);
          })
          .finally(() => {
            this.resolving.delete(domain);
            this.deps.onResolved();
          }),
      );
    }
    return known?.destination;
  }

  private sweep(now: number): void {
    for (const [domain, known] of this.known) if (known.until <= now) this.known.delete(domain);
    this.deps.onSweep(now);
  }
}
