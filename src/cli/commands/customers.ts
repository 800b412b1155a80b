import type { Command } from 'commander';
import type { Config } from '../../config/schema.js';
import { CUSTOMER_NAME, type Customer, type CustomerPools, type CustomerPoolsChange } from '../../store/model.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';
import { type QuotaOptions, quotaLines, quotaOptions, quotaShown, quotasOf } from './customer-quotas.js';

type SetOptions = QuotaOptions & { pool?: string; allowPools?: string };

const NO_POOLS: CustomerPools = { default_pool: null, allowed_pools: [] };

const view = (c: Customer, pools: CustomerPools = NO_POOLS) => ({
  id: c.id,
  name: c.name,
  created_at: iso(c.created_at),
  pool: pools.default_pool,
  allowed_pools: pools.allowed_pools,
});

/**
 * `customers set`'s pool options as a change, every name checked against outbound.pools (an
 * unknown one is an error and nothing changes); "" clears; empty: neither option given.
 */
function poolsChange(config: Config, opts: { pool?: string; allowPools?: string }): CustomerPoolsChange {
  const configured = config.outbound.pools.map((p) => p.name);
  const known = (name: string, option: string) => {
    if (!configured.includes(name))
      throw new CliError(
        `${option}: "${name}" is not a configured pool (${configured.length ? `outbound.pools: ${configured.join(', ')}` : 'no [[outbound.pools]] is configured'})`,
      );
    return name;
  };
  const change: CustomerPoolsChange = {};
  if (opts.pool !== undefined) change.defaultPool = opts.pool.trim() === '' ? null : known(opts.pool.trim(), '--pool');
  if (opts.allowPools !== undefined)
    change.allowedPools = [
      ...new Set(
        opts.allowPools
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
          .map((n) => known(n, '--allow-pools')),
      ),
    ];
  return change;
}

export function customersCommand(program: Command): void {
  const cmd = program
    .command('customers')
    .description('manage customers (every key, domain and message belongs to one)');
  cmd
    .command('add <name>')
    .description('add a customer')
    .action(async (name: string, _o, c: Command) =>
      withStore(c, async ({ store, now }) => {
        if (!CUSTOMER_NAME.test(name)) throw new CliError('customer names are 1-63 letters, digits, "_", "." or "-"');
        if (await store.customers.find(name)) throw new CliError(`customer "${name}" already exists`);
        const v = view(await store.customers.add(name, now));
        output(c, v, `customer ${v.name} added (id ${v.id})`);
      }),
    );
  cmd
    .command('list')
    .description('list customers')
    .action(async (_o, c: Command) =>
      withStore(c, async ({ store }) => {
        const pools = await store.customers.pools();
        const rows = (await store.customers.list()).map((x) => view(x, pools.get(x.id)));
        output(
          c,
          rows,
          table(
            rows.map((r) => ({ ...r, pool: r.pool ?? '', allowed_pools: r.allowed_pools.join(',') })),
            ['id', 'name', 'created_at', 'pool', 'allowed_pools'],
          ),
        );
      }),
    );
  cmd
    .command('show <name>')
    .description('show a customer, its counts and its send quotas with their use')
    .action(async (name: string, _o, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const cust = await customerNamed(store, name);
        const pools = (await store.customers.pools()).get(cust.id);
        const v = { ...view(cust, pools), ...(await store.customers.counts(cust.id)) };
        const quotas = await quotaShown(store, config, cust.id, now);
        output(
          c,
          { ...v, quotas },
          `${Object.entries(v)
            .map(([k, val]) => `${k}: ${Array.isArray(val) ? val.join(',') : (val ?? '')}`)
            .join('\n')}\nsend quotas (recipients accepted in the current window):\n${quotaLines(quotas)}`,
        );
      }),
    );
  setCommand(cmd);
}

/** `customers set`: a customer's pools of source addresses and its send quotas, every value checked before anything changes. */
function setCommand(cmd: Command): void {
  quotaOptions(
    cmd
      .command('set <name>')
      .description("change a customer's settings: its pools of source addresses and its send quotas")
      .option('--pool <pool>', 'its default pool of source addresses (outbound.pools); "" for the configured default')
      .option('--allow-pools <pools>', 'the pools it may choose per send, comma-separated; "" for none'),
  ).action(async (name: string, opts: SetOptions, c: Command) => {
    // Every value checked before anything is read or changed (the pools' names against the configuration).
    const quotas = quotasOf(opts);
    await withStore(c, async ({ store, config, now }) => {
      const change = poolsChange(config, opts);
      if (change.defaultPool === undefined && change.allowedPools === undefined && Object.keys(quotas).length === 0)
        throw new CliError(
          'nothing to set: give at least one of --pool, --allow-pools, --per-minute, --per-day, --per-month',
        );
      const cust = await customerNamed(store, name);
      if (Object.keys(quotas).length > 0) await store.customers.setQuotas(cust.id, quotas);
      const pools =
        change.defaultPool === undefined && change.allowedPools === undefined
          ? (await store.customers.pools()).get(cust.id)
          : await store.customers.setPools(cust.id, change);
      const v = { ...view(cust, pools), quotas: await quotaShown(store, config, cust.id, now) };
      output(
        c,
        v,
        `customer ${v.name}: pool ${v.pool ?? '(the configured default)'}, allowed pools ${v.allowed_pools.join(',') || '(none)'}\nsend quotas:\n${quotaLines(v.quotas)}`,
      );
    });
  });
}
