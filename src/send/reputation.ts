import {
  judge,
  levelOf,
  type Rates,
  type ReputationSettings,
  type ReputationState,
  rateReason,
  ratesOf,
  stateEventData,
} from '../domain/reputation.js';
import type { Customer } from '../store/model.js';
import type { Standing, Store } from '../store/store.js';

/**
 * A customer's reputation as a use case (docs/operations.md, "Reputation"): its rates over the
 * rolling window judged against the `[reputation]` thresholds (domain/reputation.ts), a warning
 * or a pause written with its event (`customer.warning`, `customer.paused`) in one transaction,
 * and an administrator's pause or resume by hand, the same for the CLI and the dashboard.
 *
 * The daemon's check (`ReputationGuard.check`) runs every `reputation.check_interval` on one node
 * (the store's job claim): it reads one counter sum per customer for the current hour (primary-key
 * reads of the counters the outcomes' transactions keep) and judges again only the customers
 * whose sum moved since its last look, so a customer that stays quiet costs one read a check, and
 * none of this is on the path of a send or of a delivery.
 */

const HOUR = 3_600_000;

/** The first hour of the window ending now (the oldest hour counts whole). */
const windowStart = (now: number, s: ReputationSettings): number => Math.floor((now - s.windowMs) / HOUR);

export interface CustomerReputation {
  standing: Standing;
  rates: Rates;
}

/** A customer's standing and its rates now (the overview, `customers show`, /metrics). */
export async function reputationOf(
  store: Store,
  customerId: number,
  s: ReputationSettings,
  now: number,
): Promise<CustomerReputation> {
  const { counts, standing } = await store.reputation.counts(customerId, windowStart(now, s));
  return { standing, rates: ratesOf(counts, s.minRecipients) };
}

export class ReputationGuard {
  /** Each customer's counter sum of an hour at the last look (`hour:sum`). */
  private readonly seen = new Map<number, string>();

  constructor(
    private readonly store: Store,
    private readonly settings: () => ReputationSettings,
  ) {}

  /** Judges the customers whose counters moved since the last check; answers the changes written. */
  async check(now: number): Promise<Array<{ customerId: number; to: ReputationState }>> {
    const hour = Math.floor(now / HOUR);
    const changes: Array<{ customerId: number; to: ReputationState }> = [];
    for (const [customerId, sum] of await this.store.reputation.hourActivity(hour)) {
      const mark = `${hour}:${sum}`;
      if (this.seen.get(customerId) === mark) continue;
      const to = await this.judgeOne(customerId, now);
      if (to) changes.push({ customerId, to });
      this.seen.set(customerId, mark);
    }
    return changes;
  }

  private async judgeOne(customerId: number, now: number): Promise<ReputationState | null> {
    const s = this.settings();
    const { standing, rates } = await reputationOf(this.store, customerId, s, now);
    const to = judge(standing.state, levelOf(rates, s));
    if (!to) return null;
    const customer = await this.store.customers.byId(customerId);
    if (!customer) return null;
    const reason = rateReason(rates, s, to);
    const event =
      to === 'ok'
        ? null
        : {
            type: to === 'paused' ? ('customer.paused' as const) : ('customer.warning' as const),
            data: stateEventData({
              customer: customer.name,
              state: to,
              reason,
              by: 'reputation',
              rates,
              settings: s,
              now,
            }),
          };
    const changed = await this.store.reputation.change({
      customerId,
      from: standing.state,
      to,
      reason,
      by: 'reputation',
      event,
      now,
    });
    return changed ? to : null;
  }
}

/** Why a pause or resume by hand was refused: the CLI's and the dashboard's message. */
export class ReputationError extends Error {}

/** An administrator pauses a customer (`customers pause NAME --reason …`): `customer.paused` fires. */
export async function pauseCustomer(
  store: Store,
  customer: Customer,
  reason: string,
  s: ReputationSettings,
  now: number,
): Promise<void> {
  const why = reason.trim();
  if (why === '') throw new ReputationError('a pause needs a reason (--reason "…"), which the customer is told');
  if (why.length > 500) throw new ReputationError('the reason is longer than 500 characters');
  await change(store, customer, 'paused', why, s, now);
}

/** An administrator resumes a paused customer: its held mail goes out, its rates count again from now. */
export async function resumeCustomer(store: Store, customer: Customer, s: ReputationSettings, now: number) {
  await change(store, customer, 'ok', 'resumed by an administrator', s, now);
}

async function change(
  store: Store,
  customer: Customer,
  to: 'paused' | 'ok',
  reason: string,
  s: ReputationSettings,
  now: number,
): Promise<void> {
  const { standing, rates } = await reputationOf(store, customer.id, s, now);
  if (to === 'paused' && standing.state === 'paused')
    throw new ReputationError(`customer ${customer.name} is already paused (${standing.reason ?? 'no reason given'})`);
  if (to === 'ok' && standing.state !== 'paused') throw new ReputationError(`customer ${customer.name} is not paused`);
  const data = stateEventData({
    customer: customer.name,
    state: to,
    reason,
    by: 'administrator',
    rates,
    settings: s,
    now,
  });
  const type = to === 'paused' ? ('customer.paused' as const) : ('customer.resumed' as const);
  const changed = await store.reputation.change({
    customerId: customer.id,
    from: standing.state,
    to,
    reason,
    by: 'administrator',
    event: { type, data },
    now,
  });
  if (!changed) throw new ReputationError(`customer ${customer.name} changed state meanwhile; try again`);
}
