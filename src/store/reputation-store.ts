import type { EventType } from '../domain/events.js';
import type { ReputationCounts, ReputationState } from '../domain/reputation.js';

/**
 * A customer's reputation state as the store keeps it (docs/operations.md, "Reputation"): its
 * standing (ok, warning or paused, and why), the counters of its rolling window (the hourly
 * counters the transitions' writers keep, domain/reputation.ts), and a change of standing written
 * with its event in one transaction, only if the standing is still the one it was judged from (so
 * the event fires once, whichever node judged it).
 */
export interface Standing {
  customer_id: number;
  state: ReputationState;
  /** Set while paused: new sends refused, its queue held (not claimed, so not expired). */
  paused_at: number | null;
  reason: string | null;
  paused_by: 'reputation' | 'administrator' | null;
  changed_at: number | null;
  /** Its counters count from here (the last resume): what came before does not pause it again. */
  since: number;
}

export const okStanding = (customerId: number): Standing => ({
  customer_id: customerId,
  state: 'ok',
  paused_at: null,
  reason: null,
  paused_by: null,
  changed_at: null,
  since: 0,
});

export interface StandingChange {
  customerId: number;
  /** Written only if the customer's state is still this one. */
  from: ReputationState;
  to: ReputationState;
  /** A pause's reason (kept while paused). */
  reason: string | null;
  by: 'reputation' | 'administrator';
  /** Fired to the customer's webhook endpoints in the same transaction. */
  event: { type: EventType; data: Record<string, unknown> } | null;
  now: number;
}

/** The standing row a change writes: the new state, and while paused when, why and by whom. */
export function standingRow(c: StandingChange): Omit<Standing, 'customer_id' | 'since'> {
  const paused = c.to === 'paused';
  return {
    state: c.to,
    paused_at: paused ? c.now : null,
    reason: paused ? c.reason : null,
    paused_by: paused ? c.by : null,
    changed_at: c.now,
  };
}

export interface ReputationStore {
  /** The customer's standing (ok when it never changed). */
  standing(customerId: number): Promise<Standing>;
  /** The customers paused now (the delivery loop gives back what waits of theirs). */
  paused(): Promise<number[]>;
  /** Every customer's standing that ever changed. */
  standings(): Promise<Standing[]>;
  /** Each customer's reputation counters of one hour, summed (a cheap look for what moved: primary-key reads). */
  hourActivity(hour: number): Promise<Map<number, number>>;
  /** The customer's counters from `fromHour` on (and from its last resume), with its standing. */
  counts(customerId: number, fromHour: number): Promise<{ counts: ReputationCounts; standing: Standing }>;
  /** Writes the change if the state is still `from` (a resume restarts the counters): false when it had moved. */
  change(input: StandingChange): Promise<boolean>;
}
