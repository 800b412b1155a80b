import { type Command, Option } from 'commander';
import type { SuppressionReason } from '../../store/model.js';
import { DEFAULT_CUSTOMER } from '../../store/model.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';

const REASONS: readonly SuppressionReason[] = ['hard_bounce', 'spam_complaint', 'manual', 'unsubscribe'];

import { parseAddrSpec } from '../../domain/addresses.js';

export function suppressionsCommand(program: Command): void {
  const cmd = program
    .command('suppressions')
    .description("a customer's suppression list (addresses compared case-insensitively)");
  cmd
    .command('list')
    .description('list suppressed addresses, newest first')
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .addOption(new Option('--reason <reason>', 'only those suppressed for this reason').choices(REASONS))
    .option('--limit <n>', 'how many', '100')
    .action(async (o: { customer: string; reason?: string; limit: string }, c: Command) =>
      withStore(c, async ({ store }) => {
        const rows = (
          await store.suppressions.list((await customerNamed(store, o.customer)).id, {
            limit: Math.max(1, Number(o.limit) || 100),
            ...(o.reason ? { reason: o.reason } : {}),
          })
        ).map((r) => ({
          ...r,
          created_at: iso(r.created_at),
        }));
        output(c, rows, table(rows, ['address', 'reason', 'message_id', 'created_at']));
      }),
    );
  cmd
    .command('add <address>')
    .description('suppress an address by hand (reason manual): nothing is sent to it')
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .action(async (address: string, o: { customer: string }, c: Command) =>
      withStore(c, async ({ store, now }) => {
        const p = parseAddrSpec(address.trim());
        if (!p.ok) throw new CliError(`"${address}" ${p.error}`);
        const created = await store.suppressions.add({
          customerId: (await customerNamed(store, o.customer)).id,
          address: p.value.address,
          reason: 'manual',
          now,
        });
        output(
          c,
          { address: p.value.address.toLowerCase(), reason: 'manual', created },
          created ? `${p.value.address} suppressed` : `${p.value.address} was already suppressed`,
        );
      }),
    );
  cmd
    .command('remove <address>')
    .description('take an address off the list: mail to it is sent again')
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .action(async (address: string, o: { customer: string }, c: Command) =>
      withStore(c, async ({ store }) => {
        if (!(await store.suppressions.remove((await customerNamed(store, o.customer)).id, address)))
          throw new CliError(`${address} is not on the suppression list`);
        output(c, { address: address.toLowerCase(), deleted: true }, `${address} removed from the suppression list`);
      }),
    );
}
