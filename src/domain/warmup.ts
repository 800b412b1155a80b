import { utcDay } from './tls-report.js';

/**
 * The warm-up of a source address (docs/delivery.md, "Warm-up"): from its `warmup_start` day an
 * address follows outbound.warmup_schedule, messages per destination per UTC day by day since
 * the start; past the schedule's end, or without `warmup_start`, it has no cap. Pure: the time
 * is the caller's, the days are UTC days.
 */

const DAY = 86_400_000;

/**
 * The default schedule, 28 days to full volume (docs/delivery.md, "Warm-up", gives the
 * reasoning): no step more than doubles the day before, none after the first week more than
 * half again, so no receiver sees a sudden spike from the address.
 */
export const DEFAULT_WARMUP_SCHEDULE: readonly number[] = [
  50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 4000, 5000, 7500, 10_000, 12_500, 15_000, 20_000, 25_000, 30_000,
  40_000, 50_000, 60_000, 70_000, 80_000, 100_000, 125_000, 150_000, 200_000,
];

/** A schedule's mistakes, or null: non-empty, positive integers, never going down. */
export function scheduleProblem(v: readonly unknown[]): string | null {
  if (v.length === 0) return 'expected a non-empty array of messages per destination per day, e.g. [50, 100, 200]';
  for (const [i, n] of v.entries()) {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1)
      return `day ${i} (element ${i}): ${JSON.stringify(n)} is not a positive integer`;
    const before = v[i - 1] as number | undefined;
    if (before !== undefined && n < before)
      return `day ${i} (element ${i}): ${n} is below day ${i - 1}'s ${before}; a warm-up schedule never goes down`;
  }
  return null;
}

/** Midnight UTC of a "YYYY-MM-DD" day, in ms. */
const midnight = (day: string) => Date.parse(`${day}T00:00:00Z`);

/**
 * The day of an address's warm-up at `now`: 0 on its `warmup_start` day (and on any day before
 * it), 1 the next UTC day, and so on; null when it has no `warmup_start`.
 */
export function warmupDayIndex(start: string | undefined, now: number): number | null {
  if (start === undefined) return null;
  return Math.max(0, Math.floor((now - midnight(start)) / DAY));
}

/** The cap per destination of an address at `now`; null: no cap (no `warmup_start`, or past the schedule). */
export function warmupCap(schedule: readonly number[], start: string | undefined, now: number): number | null {
  const day = warmupDayIndex(start, now);
  if (day === null || day >= schedule.length) return null;
  return schedule[day]!;
}

/** The next UTC midnight after `now`: when a day's caps renew. */
export function nextUtcMidnight(now: number): number {
  return (Math.floor(now / DAY) + 1) * DAY;
}

/** The day a reservation at `now` counts on (the store's key). */
export const warmupDayOf = (now: number): string => utcDay(now);

/** An address's use on a day, as the store sums it: destinations sent to, messages in all, the one most used. */
export interface WarmupUse {
  ip: string;
  destinations: number;
  sent: number;
  highest: { destination: string; used: number };
}

/** A configured address, as status and the dashboard show it with its warm-up and today's use. */
export interface WarmupAddressStatus {
  pool: string;
  ip: string;
  ehlo: string;
  warmup_start: string | null;
  /** Day N (1 on the start day) of `days`; null: at full volume. */
  day: number | null;
  days: number;
  /** Today's cap per destination; null: none (full volume). */
  cap: number | null;
  /** Today's use: destinations sent to, messages, and the destination most used. */
  destinations: number;
  sent: number;
  highest: { destination: string; used: number } | null;
}

/** Each configured address, pool by pool, with its warm-up day and cap at `now` and its use today (`usage`: the store's, of today). */
export function warmupStatus(
  pools: ReadonlyArray<{ name: string; addresses: ReadonlyArray<{ ip: string; ehlo: string; warmup_start?: string }> }>,
  schedule: readonly number[],
  usage: readonly WarmupUse[],
  now: number,
): WarmupAddressStatus[] {
  const used = new Map(usage.map((u) => [u.ip, u]));
  return pools.flatMap((p) =>
    p.addresses.map((a) => {
      const cap = warmupCap(schedule, a.warmup_start, now);
      const u = used.get(a.ip);
      return {
        pool: p.name,
        ip: a.ip,
        ehlo: a.ehlo,
        warmup_start: a.warmup_start ?? null,
        day: cap === null ? null : warmupDayIndex(a.warmup_start, now)! + 1,
        days: schedule.length,
        cap,
        destinations: u?.destinations ?? 0,
        sent: u?.sent ?? 0,
        highest: u ? { ...u.highest } : null,
      };
    }),
  );
}

/** One line of an address's warm-up: "day 3 of 28, 200 per destination" or "full volume". */
export function warmupPhrase(a: WarmupAddressStatus): string {
  return a.day === null ? 'full volume' : `warm-up day ${a.day} of ${a.days}, ${a.cap} per destination today`;
}
