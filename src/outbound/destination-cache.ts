import type { Clock } from '../lib/clock.js';

/** How long a domain's destination is trusted before it is looked up again (the MX cache's time). */
const DESTINATION_TTL_MS = 60_000;
/** After a failed lookup (no answer to tell by), how soon it is tried again. */
const FAILED_TTL_MS = 10_000;
/** Known domains past which old entries are swept. */
const SWEEP_AT = 10_000;

export interface DestinationCacheDeps {
  /**
   * The destination a domain's mail goes to (domain/destinations.ts), the domain itself when the
   * answer says it is its own (no MX, a null MX, no such domain); rejects when it cannot be told
   * now (the DNS did not answer).
   */
  lookup: (domain: string) => Promise<string>;
  clock: Clock;
  /** Runs a lookup in the background (the scheduler's pool waits for it at stop). */
  track: (work: Promise<void>) => void;
  /** A lookup finished: the domain's items can now be started. */
  onResolved: () => void;
  /**
   * A domain's destination found, the first time in this process or changed since (the domain
   * itself when it became its own): kept in the store for selections by destination, where an
   * earlier run or another node may have kept another.
   */
  onLearned?: (domain: string, destination: string) => void;
  /** Old entries were swept (more than SWEEP_AT domains known): the caller forgets what is idle too. */
  onSweep: (now: number) => void;
}

interface Known {
  destination: string;
  until: number;
  /** Found by an answer (false: a failed lookup's stand-in, never kept in the store). */
  learnt: boolean;
}

/**
 * Each recipient domain's destination, as the scheduler groups by it: looked up in the
 * background the first time (the domain's items wait a round), trusted for DESTINATION_TTL_MS,
 * refreshed in the background when old, and swept so memory stays bounded however many domains
 * are sent to. A lookup that fails keeps the destination learnt before (tried again after
 * FAILED_TTL_MS); with none, the domain stands for itself meanwhile, and nothing is kept.
 */
export class DestinationCache {
  private readonly known = new Map<string, Known>();
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
          .then(
            (destination) => this.learnt(domain, destination),
            () => this.failed(domain),
          )
          .finally(() => {
            this.resolving.delete(domain);
            this.deps.onResolved();
          }),
      );
    }
    return known?.destination;
  }

  private learnt(domain: string, destination: string): void {
    const before = this.known.get(domain);
    if (!before?.learnt || before.destination !== destination) this.deps.onLearned?.(domain, destination);
    this.set(domain, { destination, until: this.deps.clock.now() + DESTINATION_TTL_MS, learnt: true });
  }

  private failed(domain: string): void {
    const before = this.known.get(domain);
    const until = this.deps.clock.now() + FAILED_TTL_MS;
    this.set(domain, before?.learnt ? { ...before, until } : { destination: domain, until, learnt: false });
  }

  private set(domain: string, entry: Known): void {
    this.known.set(domain, entry);
    if (this.known.size > SWEEP_AT) this.sweep(this.deps.clock.now());
  }

  private sweep(now: number): void {
    for (const [domain, known] of this.known) if (known.until <= now) this.known.delete(domain);
    this.deps.onSweep(now);
  }
}
