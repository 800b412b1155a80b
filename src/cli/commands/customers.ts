import type { Command } from 'commander';
import { CUSTOMER_NAME, type Customer } from '../../store/model.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';
import { customerQuotaCommands, quotaLines, quotaShown } from './customer-quotas.js';

const view = (c: Customer) => ({ id: c.id, name: c.name, created_at: iso(c.created_at) });

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
        const rows = (await store.customers.list()).map(view);
        output(c, rows, table(rows, ['id', 'name', 'created_at']));
      }),
    );
  cmd
    .command('show <name>')
    .description('show a customer, its counts and its send quotas with their use')
    .action(async (name: string, _o, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const cust = await customerNamed(store, name);
        const v = { ...view(cust), ...(await store.customers.counts(cust.id)) };
        const quotas = await quotaShown(store, config, cust.id, now);
        output(
          c,
          { ...v, quotas },
          `${Object.entries(v)
            .map(([k, val]) => `${k}: ${val}`)
            .join('\n')}\nsend quotas (recipients accepted in the current window):\n${quotaLines(quotas)}`,
        );
      }),
    );
  customerQuotaCommands(cmd);
}
