import type { Command } from 'commander';
import type { Config } from '../../config/schema.js';
import { quotaDefaults } from '../../config/settings.js';
import { parseQuota, quotaStatus, useText } from '../../domain/quotas.js';
import type { CustomerQuotas } from '../../store/model.js';
import type { Store } from '../../store/store.js';
import { CliError } from '../context.js';

/** `customers set`'s send quota options (docs/operations.md, "Send quotas"). */
export function quotaOptions(cmd: Command): Command {
  return cmd
    .option('--per-minute <n>', 'send quota: recipients per minute (0: none; "default": the [limits] default)')
    .option('--per-day <n>', 'send quota: recipients per day (UTC)')
    .option('--per-month <n>', 'send quota: recipients per calendar month (UTC)');
}

export interface QuotaOptions {
  perMinute?: string;
  perDay?: string;
  perMonth?: string;
}

/** The quota options as a change, every value checked (a bad one is an error); empty: none given. */
export function quotasOf(o: QuotaOptions): Partial<CustomerQuotas> {
  const q: Partial<CustomerQuotas> = {};
  const one = (flag: string, v: string | undefined, set: (n: number | null) => void) => {
    if (v === undefined) return;
    if (v.trim() === 'default') return set(null);
    const n = parseQuota(flag, v);
    if (typeof n === 'string') throw new CliError(n);
    set(n);
  };
  one('--per-minute', o.perMinute, (n) => (q.perMinute = n));
  one('--per-day', o.perDay, (n) => (q.perDay = n));
  one('--per-month', o.perMonth, (n) => (q.perMonth = n));
  return q;
}

/** The customer's quotas in effect and their use in the current windows, production and sandbox keys apart. */
export async function quotaShown(store: Store, config: Config, id: number, now: number) {
  const own = (await store.customers.quotas(id))!;
  const use = await store.customers.quotaUse(id, now);
  return quotaStatus([own.perMinute, own.perDay, own.perMonth], quotaDefaults(config), use).map((s) => ({
    quota: s.quota,
    limit: s.limit,
    source: s.own ? 'customer' : 'default',
    used: s.used,
    sandbox_limit: s.sandboxLimit,
    sandbox_used: s.sandboxUsed,
  }));
}

export function quotaLines(rows: Awaited<ReturnType<typeof quotaShown>>): string {
  return rows
    .map(
      (r) =>
        `${r.quota}: ${useText(r.used, r.limit)}${r.limit > 0 ? ` (${r.source})` : ''}; sandbox ${useText(r.sandbox_used, r.sandbox_limit)}`,
    )
    .join('\n');
}
