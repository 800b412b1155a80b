import type { WarmupUse } from '../domain/warmup.js';

export type { WarmupUse } from '../domain/warmup.js';

/**
 * The warm-up's part of the store (docs/delivery.md, "Warm-up"): messages counted per UTC day,
 * source address and destination against the address's cap that day, shared by every node on
 * one PostgreSQL. Days are "YYYY-MM-DD"; the retention sweep removes those before yesterday.
 */
export interface WarmupStore {
  /**
   * Grants each want min(n, cap - used) (never below 0) and adds it to its day's use, all in one
   * transaction; the grants, in the wants' order. Two nodes reserving the last room at once never
   * together pass the cap.
   */
  reserve(day: string, wants: readonly WarmupWant[]): Promise<number[]>;
  /** Takes back `n` reserved but not sent (the use never goes below 0). */
  giveBack(day: string, ip: string, destination: string, n: number): Promise<void>;
  /**
   * A day's use, one row per source address that sent (bounded by the addresses, not the
   * destinations): destinations sent to, messages in all, and the destination most used (the
   * first by name among equals), by address.
   */
  usage(day: string): Promise<WarmupUse[]>;
}

/** Up to `n` sends from `ip` to `destination`, against a cap of `cap` that day. */
export interface WarmupWant {
  ip: string;
  destination: string;
  n: number;
  cap: number;
}

/** A want's grant: what room is left, at most n, never below 0. */
export const grantOf = (w: WarmupWant, used: number): number => Math.max(0, Math.min(w.n, w.cap - used));

/**
 * A day's use per address, written once for both engines (`day`: the engine's placeholder): the
 * address's rows ranked by use, the first of each with the address's sums.
 */
export const usageSql = (day: string) => `SELECT ip, destination, used, destinations, sent FROM (
  SELECT ip, destination, used,
         count(*) OVER (PARTITION BY ip) AS destinations,
         sum(used) OVER (PARTITION BY ip) AS sent,
         row_number() OVER (PARTITION BY ip ORDER BY used DESC, destination) AS n
  FROM warmup_use WHERE day = ${day} AND used > 0
) ranked WHERE n = 1 ORDER BY ip`;

export interface UsageRow {
  ip: string;
  destination: string;
  used: number | string;
  destinations: number | string;
  sent: number | string;
}

/** A row of usageSql as the store gives it. */
export const useOf = (r: UsageRow): WarmupUse => ({
  ip: r.ip,
  destinations: Number(r.destinations),
  sent: Number(r.sent),
  highest: { destination: r.destination, used: Number(r.used) },
});
