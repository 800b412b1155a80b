import type { Command } from 'commander';
import type { ApiKeyInfo } from '../../store/model.js';
import { DEFAULT_CUSTOMER } from '../../store/model.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';

/** `keys create`: exactly one kind asked for, the key made for the customer and printed this once. */
async function createKey(
  o: { customer: string; sandbox?: boolean; production?: boolean; name: string },
  c: Command,
): Promise<void> {
  await withStore(c, async ({ store, now }) => {
    if (!!o.sandbox === !!o.production) throw new CliError('give exactly one of --sandbox or --production');
    const customer = await customerNamed(store, o.customer);
    const k = await store.keys.create({
      customerId: customer.id,
      kind: o.sandbox ? 'sandbox' : 'production',
      name: o.name,
      now,
    });
    const v = {
      id: k.id,
      key: k.key,
      kind: k.kind,
      customer: customer.name,
      name: k.name,
      created_at: iso(k.created_at),
    };
    output(
      c,
      v,
      `${v.kind} key ${v.id} for customer ${v.customer}:\n\n  ${v.key}\n\nStore it now: it is not shown again.`,
    );
  });
}

export function keysCommand(program: Command): void {
  const cmd = program.command('keys').description('manage API keys (shown once at creation; only a hash is stored)');
  cmd
    .command('create')
    .description('create a key and print it once')
    .option('--customer <name>', 'owning customer', DEFAULT_CUSTOMER)
    .option('--sandbox', 'sandbox key (ph_test_): nothing is delivered, events still fire')
    .option('--production', 'production key (ph_live_): real delivery')
    .option('--name <name>', 'a label for the key', '')
    .action(createKey);
  cmd
    .command('list')
    .description('list keys (never the keys themselves)')
    .option('--customer <name>', 'only this customer')
    .action(async (o: { customer?: string }, c: Command) =>
      withStore(c, async ({ store }) => {
        const names = new Map((await store.customers.list()).map((x) => [x.id, x.name]));
        const rows = (
          await store.keys.list(o.customer !== undefined ? (await customerNamed(store, o.customer)).id : undefined)
        ).map((k: ApiKeyInfo) => ({
          id: k.id,
          kind: k.kind,
          customer: names.get(k.customer_id),
          name: k.name,
          created_at: iso(k.created_at),
          revoked_at: iso(k.revoked_at),
        }));
        output(c, rows, table(rows, ['id', 'kind', 'customer', 'name', 'created_at', 'revoked_at']));
      }),
    );
  cmd
    .command('revoke <id>')
    .description('revoke a key; refused from the next request on')
    .action(async (id: string, _o, c: Command) =>
      withStore(c, async ({ store, now }) => {
        if (!(await store.keys.revoke(id, now))) throw new CliError(`no key with id "${id}"`);
        output(c, { id, revoked: true }, `key ${id} revoked`);
      }),
    );
}
