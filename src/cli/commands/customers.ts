import type { Command } from 'commander';
import { CUSTOMER_NAME, type Customer } from '../../store/model.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';

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
    .description('show a customer and its counts')
    .action(async (name: string, _o, c: Command) =>
      withStore(c, async ({ store }) => {
        const cust = await customerNamed(store, name);
        const unsubscribe = (await store.customers.unsubscribeDefault(cust.id)) ? 'on' : 'off';
        const v = { ...view(cust), ...(await store.customers.counts(cust.id)), unsubscribe };
        output(
          c,
          v,
          Object.entries(v)
            .map(([k, val]) => `${k}: ${val}`)
            .join('\n'),
        );
      }),
    );
  setCommand(cmd);
}

/** `customers set NAME --unsubscribe on|off`: the customer's default for the List-Unsubscribe fields (docs/delivery.md). */
function setCommand(cmd: Command): void {
  cmd
    .command('set <name>')
    .description("change a customer's settings")
    .option('--unsubscribe <on|off>', "add the one-click List-Unsubscribe fields to all the customer's mail by default")
    .action(async (name: string, o: { unsubscribe?: string }, c: Command) =>
      withStore(c, async ({ store, config }) => {
        const cust = await customerNamed(store, name);
        if (o.unsubscribe === undefined) throw new CliError('nothing to set: give --unsubscribe on|off');
        if (o.unsubscribe !== 'on' && o.unsubscribe !== 'off')
          throw new CliError(`--unsubscribe takes on or off, not "${o.unsubscribe}"`);
        const on = o.unsubscribe === 'on';
        if (on && !config.unsubscribe.public_url)
          throw new CliError(
            'unsubscribe.public_url is not configured: set it (and unsubscribe.listen) first, or the mail would wait for it',
          );
        await store.customers.setUnsubscribeDefault(cust.id, on);
        output(c, { ...view(cust), unsubscribe: o.unsubscribe }, `customer ${cust.name}: unsubscribe ${o.unsubscribe}`);
      }),
    );
}
