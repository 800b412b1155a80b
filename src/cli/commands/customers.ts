import type { Command } from 'commander';
import type { Config } from '../../config/schema.js';
import { reputationSettings } from '../../config/settings.js';
import type { ReputationSettings } from '../../domain/reputation.js';
import { pauseCustomer, ReputationError, reputationOf, resumeCustomer } from '../../send/reputation.js';
import { CUSTOMER_NAME, type Customer, type CustomerPools, type CustomerPoolsChange } from '../../store/model.js';
import type { Store } from '../../store/store.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';
import { type QuotaOptions, quotaLines, quotaOptions, quotaShown, quotasOf } from './customer-quotas.js';

type SetOptions = QuotaOptions & { pool?: string; allowPools?: string; unsubscribe?: string };

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

/**
 * `customers set --unsubscribe on|off`: the customer's default for the List-Unsubscribe fields
 * (docs/delivery.md); on needs unsubscribe.public_url, or the mail would wait for it.
 */
function unsubscribeChange(config: Config, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== 'on' && value !== 'off') throw new CliError(`--unsubscribe takes on or off, not "${value}"`);
  if (value === 'on' && !config.unsubscribe.public_url)
    throw new CliError(
      'unsubscribe.public_url is not configured: set it (and unsubscribe.listen) first, or the mail would wait for it',
    );
  return value === 'on';
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
        const unsubscribe = (await store.customers.unsubscribeDefault(cust.id)) ? 'on' : 'off';
        const v = {
          ...view(cust, pools),
          ...(await store.customers.counts(cust.id)),
          unsubscribe,
          ...(await reputationView(store, cust, settingsOf(config), now)),
        };
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
  reputationCommands(cmd);
}

/**
 * `customers set`: a customer's pools of source addresses, its unsubscribe default and its send
 * quotas, every value checked before anything changes.
 */
function setCommand(cmd: Command): void {
  quotaOptions(
    cmd
      .command('set <name>')
      .description(
        "change a customer's settings: its pools of source addresses, its unsubscribe default, its send quotas",
      )
      .option('--pool <pool>', 'its default pool of source addresses (outbound.pools); "" for the configured default')
      .option('--allow-pools <pools>', 'the pools it may choose per send, comma-separated; "" for none')
      .option(
        '--unsubscribe <on|off>',
        "add the one-click List-Unsubscribe fields to all the customer's mail by default",
      ),
  ).action(async (name: string, opts: SetOptions, c: Command) => {
    // Every value checked before anything is read or changed (the pools' names against the configuration).
    const quotas = quotasOf(opts);
    await withStore(c, async ({ store, config, now }) => {
      const change = poolsChange(config, opts);
      const unsubscribe = unsubscribeChange(config, opts.unsubscribe);
      const poolOptions = change.defaultPool !== undefined || change.allowedPools !== undefined;
      if (!poolOptions && unsubscribe === undefined && Object.keys(quotas).length === 0)
        throw new CliError(
          'nothing to set: give at least one of --pool, --allow-pools, --unsubscribe on|off, --per-minute, --per-day, --per-month',
        );
      const cust = await customerNamed(store, name);
      if (Object.keys(quotas).length > 0) await store.customers.setQuotas(cust.id, quotas);
      const pools = poolOptions
        ? await store.customers.setPools(cust.id, change)
        : (await store.customers.pools()).get(cust.id);
      if (unsubscribe !== undefined) await store.customers.setUnsubscribeDefault(cust.id, unsubscribe);
      const on = (await store.customers.unsubscribeDefault(cust.id)) ? 'on' : 'off';
      const v = { ...view(cust, pools), unsubscribe: on, quotas: await quotaShown(store, config, cust.id, now) };
      output(
        c,
        v,
        `customer ${v.name}: pool ${v.pool ?? '(the configured default)'}, allowed pools ${v.allowed_pools.join(',') || '(none)'}, unsubscribe ${on}\nsend quotas:\n${quotaLines(v.quotas)}`,
      );
    });
  });
}

function settingsOf(config: Config): ReputationSettings {
  try {
    return reputationSettings(config);
  } catch (e) {
    throw new CliError(`config: ${(e as Error).message}`);
  }
}

/** A customer's standing and rates, flat, for `customers show`. */
async function reputationView(store: Store, cust: Customer, s: ReputationSettings, now: number) {
  const { standing, rates } = await reputationOf(store, cust.id, s, now);
  const pct = (r: number | null) => (r === null ? `not judged (under ${s.minRecipients} recipients)` : `${r}%`);
  return {
    state: standing.state,
    ...(standing.paused_at !== null
      ? { paused_at: iso(standing.paused_at), paused_by: standing.paused_by, pause_reason: standing.reason }
      : {}),
    bounce_rate: pct(rates.bounce_rate),
    complaint_rate: pct(rates.complaint_rate),
    recipients_with_outcome: rates.recipients,
    hard_bounces: rates.hard_bounces,
    expired: rates.expired,
    complaints: rates.complaints,
  };
}

/** `customers pause` and `customers resume`: an administrator's hand on a customer's sending (docs/operations.md, "Reputation"). */
function reputationCommands(cmd: Command): void {
  const guarded = async (f: () => Promise<void>) => {
    try {
      await f();
    } catch (e) {
      if (e instanceof ReputationError) throw new CliError(e.message);
      throw e;
    }
  };
  cmd
    .command('pause <name>')
    .description("pause a customer's sending: new sends refused, its queued mail held (the sandbox still works)")
    .requiredOption('--reason <text>', 'why (the customer is told, in refusals and in customer.paused)')
    .action(async (name: string, o: { reason: string }, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const cust = await customerNamed(store, name);
        await guarded(() => pauseCustomer(store, cust, o.reason, settingsOf(config), now));
        output(c, { name: cust.name, state: 'paused', reason: o.reason.trim() }, `customer ${cust.name} paused`);
      }),
    );
  cmd
    .command('resume <name>')
    .description('resume a paused customer: its held mail goes out, and its rates count again from now')
    .action(async (name: string, _o, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const cust = await customerNamed(store, name);
        await guarded(() => resumeCustomer(store, cust, settingsOf(config), now));
        output(c, { name: cust.name, state: 'ok' }, `customer ${cust.name} resumed`);
      }),
    );
}
