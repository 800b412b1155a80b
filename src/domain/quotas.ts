/**
 * A customer's send quotas (docs/operations.md, "Send quotas"): recipients accepted per minute, per
 * day and per calendar month (UTC), each a fixed window, counted apart for sandbox keys. A send
 * fits when every quota in effect (0: none) has room for all of its recipients; otherwise it is
 * refused whole, and Retry-After is the time until every exceeded window has started again. Both
 * store engines count and judge in the transaction that accepts (store/sqlite/quotas.ts,
 * store/pg/migrations/017_send_quotas.ts); this module is what both read their answer with.
 */

export const QUOTAS = ['per_minute', 'per_day', 'per_month'] as const;
export type QuotaName = (typeof QUOTAS)[number];

/** A limit per quota, in QUOTAS' order; 0: none. */
export type QuotaLimits = [perMinute: number, perDay: number, perMonth: number];

/** The server's defaults: for production keys (a customer's own quotas replace them) and for sandbox keys. */
export interface QuotaDefaults {
  live: QuotaLimits;
  sandbox: QuotaLimits;
}

export const NO_QUOTAS: QuotaDefaults = { live: [0, 0, 0], sandbox: [0, 0, 0] };

const MINUTE = 60_000;
const DAY = 86_400_000;

/** Each window's key (as counted in send_usage) and when it ends (ms), in QUOTAS' order. */
export function quotaWindows(now: number): Array<{ key: string; endsAt: number }> {
  const d = new Date(now);
  const month = d.getUTCFullYear() * 12 + d.getUTCMonth();
  return [
    { key: `m${Math.floor(now / MINUTE)}`, endsAt: (Math.floor(now / MINUTE) + 1) * MINUTE },
    { key: `d${Math.floor(now / DAY)}`, endsAt: (Math.floor(now / DAY) + 1) * DAY },
    { key: `M${month}`, endsAt: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) },
  ];
}

/** The limits in effect: a sandbox key's are the server's sandbox defaults; a production key's the customer's own where set (null: the default). */
export function effectiveLimits(
  defaults: QuotaLimits,
  own: readonly [number | null, number | null, number | null] | undefined,
): QuotaLimits {
  return [own?.[0] ?? defaults[0], own?.[1] ?? defaults[1], own?.[2] ?? defaults[2]];
}

export const hasQuota = (l: QuotaLimits): boolean => l[0] > 0 || l[1] > 0 || l[2] > 0;

/** Whether `count` more recipients fit, given what each window has used. */
export function fits(limits: QuotaLimits, used: readonly number[], count: number): boolean {
  return limits.every((limit, i) => limit === 0 || (used[i] ?? 0) + count <= limit);
}

/** A send over a quota: each exceeded quota with its limit and use, and the whole seconds until there is room in all. */
export interface QuotaExceeded {
  quotas: Array<{ quota: QuotaName; limit: number; used: number }>;
  /** The send's recipients. */
  count: number;
  retryAfter: number;
}

/** Why a send of `count` recipients does not fit (undefined: it does), at `now`. */
export function quotaExceeded(
  limits: QuotaLimits,
  used: readonly number[],
  count: number,
  now: number,
): QuotaExceeded | undefined {
  const windows = quotaWindows(now);
  const quotas: QuotaExceeded['quotas'] = [];
  let until = now;
  limits.forEach((limit, i) => {
    const u = used[i] ?? 0;
    if (limit === 0 || u + count <= limit) return;
    quotas.push({ quota: QUOTAS[i]!, limit, used: u });
    until = Math.max(until, windows[i]!.endsAt);
  });
  if (quotas.length === 0) return undefined;
  return { quotas, count, retryAfter: Math.max(1, Math.ceil((until - now) / 1000)) };
}

const UNIT: Record<QuotaName, string> = { per_minute: 'a minute', per_day: 'a day', per_month: 'a month (UTC)' };

/** What each exceeded quota says, by its name (the API's `details`, and SMTP's text). */
export function quotaDetails(q: QuotaExceeded): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const x of q.quotas)
    out[x.quota] = [
      x.limit < q.count
        ? `${x.limit} recipients ${UNIT[x.quota]}: this send alone has ${q.count}`
        : `${x.limit} recipients ${UNIT[x.quota]}: ${x.used} used, this send has ${q.count}`,
    ];
  return out;
}

/** The refusal's sentence, the same over HTTP and SMTP. */
export function quotaMessage(q: QuotaExceeded): string {
  const names = q.quotas.map((x) => x.quota).join(', ');
  return `The customer's send quota (${names}) has no room for this send's ${q.count} recipient(s); nothing was queued. Retry after ${q.retryAfter} s.`;
}

/** One quota as `customers show` and the dashboard show it: the limits in effect (0: none), where they come from, and the use. */
export interface QuotaStatus {
  quota: QuotaName;
  limit: number;
  /** Whether the limit is the customer's own or the server's default. */
  own: boolean;
  used: number;
  sandboxLimit: number;
  sandboxUsed: number;
}

export function quotaStatus(
  own: readonly [number | null, number | null, number | null],
  defaults: QuotaDefaults,
  use: { live: readonly number[]; sandbox: readonly number[] },
): QuotaStatus[] {
  const limits = effectiveLimits(defaults.live, own);
  return QUOTAS.map((quota, i) => ({
    quota,
    limit: limits[i]!,
    own: own[i] !== null,
    used: use.live[i] ?? 0,
    sandboxLimit: defaults.sandbox[i]!,
    sandboxUsed: use.sandbox[i] ?? 0,
  }));
}

/** `12 of 20`, or `12 (no limit)`. */
export const useText = (used: number, limit: number): string =>
  limit > 0 ? `${used} of ${limit}` : `${used} (no limit)`;

/**
 * A quota as given on the command line or in a form: a whole number of recipients, 0 for none;
 * an error's text otherwise.
 */
export function parseQuota(name: string, value: string): number | string {
  if (!/^\d{1,10}$/.test(value.trim()))
    return `${name} must be a whole number of recipients, 0 for no limit (got "${value}")`;
  const n = Number(value.trim());
  return n > 1_000_000_000 ? `${name} must be at most 1000000000` : n;
}
