import type { Command } from 'commander';
import type { Config } from '../../config/schema.js';
import { quotaDefaults } from '../../config/settings.js';
import { parseQuota, quotaStatus, useText } from '../../domain/quotas.js';
import type { CustomerQuotas } from '../../store/model.js';
import type { Store } from '../../store/store.js';
import { CliError, customerNamed, output, withStore } from '../context.js';

/** `customers set`: a customer's own send quotas (docs/operations.md, "Send quotas"). */
export function customerQuotaCommands(cmd: Command): void {
  cmd
    .command('set <name>')
    .description('set a customer\'s send quotas, in recipients accepted (0: none; "default": the [limits] default)')
    .option('--per-minute <n>', 'recipients per minute')
    .option('--per-day <n>', 'recipients per day (UTC)')
    .option('--per-month <n>', 'recipients per calendar month (UTC)')
    .action(async (name: string, o: { perMinute?: string; perDay?: string; perMonth?: string }, c: Command) => {
      // Every value checked before anything is read or changed.
      const q = quotasOf(o);
      await withStore(c, async ({ store, config, now }) => {
        const cust = await customerNamed(store, name);
        await store.customers.setQuotas(cust.id, q);
        const v = { name: cust.name, quotas: await quotaShown(store, config, cust.id, now) };
        output(c, v, `customer ${cust.name}: send quotas set\n${quotaLines(v.quotas)}`);
      });
    });
}

function quotasOf(o: { perMinute?: string; perDay?: string; perMonth?: string }): Partial<CustomerQuotas> {
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
  if (Object.keys(q).length === 0) throw new CliError('give at least one of --per-minute, --per-day, --per-month');
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
