import type { Transition } from './transitions.js';

/**
 * A customer's sending reputation (docs/operations.md, "Reputation"), as pure rules: what each
 * recorded transition adds to the customer's hourly counters, the rates over the rolling window,
 * and the state those rates put the customer in. The store keeps the counters (beside the
 * overview's, in activity_hourly) and writes a change of state with its event; nothing here reads
 * a row.
 *
 * - bounce rate: recipients hard-bounced (during delivery or later, by a report; hard as the
 *   suppression policy judges it: the bounce suppressed the address) over recipients with an
 *   outcome (delivered, or bounced during delivery). Expired mail is counted beside it, never in
 *   it: a destination that was down is not the list's fault.
 * - complaint rate: complaints over recipients delivered.
 * Sandbox mail never counts.
 */

/** The counters' kinds in activity_hourly (the overview's own kinds are apart). */
export const REPUTATION_KINDS = ['rep_outcome', 'rep_hard', 'rep_expired', 'rep_delivered', 'rep_complained'] as const;
export type ReputationKind = (typeof REPUTATION_KINDS)[number];

export type ReputationCounts = Record<ReputationKind, number>;

export const zeroCounts = (): ReputationCounts => ({
  rep_outcome: 0,
  rep_hard: 0,
  rep_expired: 0,
  rep_delivered: 0,
  rep_complained: 0,
});

/** What one transition adds to its customer's counters (nothing for sandbox mail). */
export function reputationKinds(sandbox: boolean, t: Transition): ReputationKind[] {
  if (sandbox) return [];
  const out: ReputationKind[] = [];
  for (const e of t.events) {
    if (e.type === 'email.delivered') out.push('rep_delivered', 'rep_outcome');
    else if (e.type === 'email.complained') out.push('rep_complained');
    else if (e.type === 'email.bounced') {
      const type = e.data.bounce_type;
      if (type === 'expired') out.push('rep_expired');
      else {
        if (type !== 'async') out.push('rep_outcome');
        if (t.suppress === 'hard_bounce') out.push('rep_hard');
      }
    }
  }
  return out;
}

/** The `[reputation]` settings (config/schema.ts); rates are percentages, 0 to 100. */
export interface ReputationSettings {
  windowMs: number;
  minRecipients: number;
  warning: { bounce: number; complaint: number };
  pause: { bounce: number; complaint: number };
}

export type ReputationState = 'ok' | 'warning' | 'paused';

export interface Rates {
  /** Percent; null until the window holds `minRecipients` outcomes (for bounces) or deliveries (for complaints). */
  bounce_rate: number | null;
  complaint_rate: number | null;
  recipients: number;
  hard_bounces: number;
  expired: number;
  delivered: number;
  complaints: number;
}

const pct = (n: number, of: number): number => Math.round((n / of) * 100 * 1000) / 1000;

/** The rates counters give; a rate is judged only once `minRecipients` recipients had an outcome. */
export function ratesOf(c: ReputationCounts, minRecipients: number): Rates {
  const enough = c.rep_outcome >= minRecipients && c.rep_outcome > 0;
  return {
    bounce_rate: enough ? pct(c.rep_hard, c.rep_outcome) : null,
    complaint_rate: enough && c.rep_delivered > 0 ? pct(c.rep_complained, c.rep_delivered) : null,
    recipients: c.rep_outcome,
    hard_bounces: c.rep_hard,
    expired: c.rep_expired,
    delivered: c.rep_delivered,
    complaints: c.rep_complained,
  };
}

/** The level the rates reach: at or past a pause threshold, a warning threshold, or neither. */
export function levelOf(r: Rates, s: ReputationSettings): ReputationState {
  const past = (rate: number | null, limit: number) => rate !== null && rate >= limit;
  if (past(r.bounce_rate, s.pause.bounce) || past(r.complaint_rate, s.pause.complaint)) return 'paused';
  if (past(r.bounce_rate, s.warning.bounce) || past(r.complaint_rate, s.warning.complaint)) return 'warning';
  return 'ok';
}

/**
 * The change the rates call for, from the state the customer is in: a pause (from ok or warning),
 * a warning (from ok), or back to ok from a warning (quietly). A paused customer stays paused
 * until an administrator resumes it.
 */
export function judge(current: ReputationState, level: ReputationState): ReputationState | null {
  if (current === 'paused' || level === current) return null;
  if (level === 'paused') return 'paused';
  if (level === 'warning') return current === 'ok' ? 'warning' : null;
  return current === 'warning' ? 'ok' : null;
}

/** An event's data for a change of state (`customer.warning`, `customer.paused`, `customer.resumed`). */
export function stateEventData(input: {
  customer: string;
  state: ReputationState;
  reason: string;
  by: 'reputation' | 'administrator';
  rates: Rates;
  settings: ReputationSettings;
  now: number;
}): Record<string, unknown> {
  const { settings: s } = input;
  const threshold = input.state === 'warning' ? s.warning : s.pause;
  return {
    customer: input.customer,
    state: input.state,
    reason: input.reason,
    by: input.by,
    rates: input.rates,
    window: { days: s.windowMs / 86_400_000, min_recipients: s.minRecipients },
    threshold: { bounce_rate: threshold.bounce, complaint_rate: threshold.complaint },
    timestamp: new Date(input.now).toISOString(),
  };
}

/** Why the rates changed the state, in words (the event's `reason`, the pause's reason). */
export function rateReason(r: Rates, s: ReputationSettings, state: ReputationState): string {
  const t = state === 'warning' ? s.warning : s.pause;
  const parts: string[] = [];
  if (r.bounce_rate !== null && r.bounce_rate >= t.bounce)
    parts.push(`bounce rate ${r.bounce_rate}% (threshold ${t.bounce}%)`);
  if (r.complaint_rate !== null && r.complaint_rate >= t.complaint)
    parts.push(`complaint rate ${r.complaint_rate}% (threshold ${t.complaint}%)`);
  return parts.join(', ') || 'rates back under the warning thresholds';
}
