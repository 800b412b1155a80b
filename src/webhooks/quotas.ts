import type { ClaimRoom } from '../store/model.js';

/**
 * How many deliveries the dispatcher holds ahead per endpoint (fanned out or claimed) and in all.
 * A fill costs store work on the event loop, so the quota is large for an endpoint that keeps up
 * (bench webhooks: 1,024 took 5-10 % less of the daemon's CPU than 256); the total bounds the event
 * bodies held in memory (~1 KiB each).
 */
export const CLAIM_PER_ENDPOINT = 1024;
export const CLAIM_TOTAL = 16_384;

/**
 * Per-endpoint quotas and health. An endpoint whose last attempt (in this process) succeeded may
 * hold its full quota; the others (new, failing, hanging) twice their concurrency, so a dead
 * endpoint cannot take the whole claim total from the live ones.
 */
export class Quotas {
  /** Endpoints whose last attempt succeeded. */
  private readonly healthy = new Set<string>();

  constructor(
    private readonly limits: {
      /** Requests in flight to one endpoint. */
      perEndpoint: number;
      claimPerEndpoint: number;
      claimTotal: number;
    },
  ) {}

  quota(endpointId: string): number {
    const { claimPerEndpoint, perEndpoint } = this.limits;
    return this.healthy.has(endpointId) ? claimPerEndpoint : Math.min(claimPerEndpoint, 2 * perEndpoint);
  }

  /** An attempt's outcome: a success makes the endpoint healthy, anything else not. */
  attempted(endpointId: string, ok: boolean): void {
    if (ok) this.healthy.add(endpointId);
    else this.healthy.delete(endpointId);
  }

  /** How many of the deliveries an endpoint has waiting are over its quota (to give back). */
  excess(endpointId: string, waiting: number): number {
    return Math.max(0, waiting - this.quota(endpointId));
  }

  /**
   * What one fill may take: each endpoint up to its quota less what it holds (`holds`, read once
   * per endpoint), and all together up to the total less `heldInAll`.
   */
  room(holds: (endpointId: string) => number, heldInAll: number): ClaimRoom {
    const held = new Map<string, number>();
    const holding = (e: string): number => {
      let n = held.get(e);
      if (n === undefined) held.set(e, (n = holds(e)));
      return n;
    };
    let free = Math.max(0, this.limits.claimTotal - heldInAll);
    return {
      room: (e) => Math.min(free, Math.max(0, this.quota(e) - holding(e))),
      take: (e) => {
        held.set(e, holding(e) + 1);
        free--;
      },
    };
  }
}
