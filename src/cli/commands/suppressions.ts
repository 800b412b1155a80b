import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { parseSuppressionEntry } from '../../domain/addresses.js';
import { csvField, parseSuppressionFile } from '../../domain/suppression-file.js';
import type { SuppressionReason } from '../../store/model.js';
import { DEFAULT_CUSTOMER } from '../../store/model.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';

const REASONS: readonly SuppressionReason[] = ['hard_bounce', 'spam_complaint', 'manual', 'unsubscribe'];

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
    .description(
      'suppress an address, or a whole domain written @example.com, by hand (reason manual): nothing is sent to it',
    )
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .action(async (address: string, o: { customer: string }, c: Command) =>
      withStore(c, async ({ store, now }) => {
        const p = parseSuppressionEntry(address);
        if (!p.ok) throw new CliError(`"${address}" ${p.error}`);
        const [created] = await store.suppressions.addMany(
          (await customerNamed(store, o.customer)).id,
          [{ address: p.value, reason: 'manual' }],
          now,
        );
        output(
          c,
          { address: p.value, reason: 'manual', created },
          created ? `${p.value} suppressed` : `${p.value} was already suppressed`,
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
  bulkCommands(cmd);
}

/** `suppressions import` and `export` (docs/operations.md, "Suppressions in bulk"). */
function bulkCommands(cmd: Command): void {
  cmd
    .command('import <file>')
    .description(
      'add the addresses (or @domains) of a file, one a line or CSV with address,reason; a file with a refused line adds nothing unless --skip-refused',
    )
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .option('--skip-refused', 'add the good lines even when some are refused')
    .action(async (path: string, o: { customer: string; skipRefused?: boolean }, c: Command) => {
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (e) {
        throw new CliError(`cannot read ${path}: ${(e as Error).message}`);
      }
      const file = parseSuppressionFile(text);
      await withStore(c, async ({ store, now }) => {
        const customer = await customerNamed(store, o.customer);
        const apply = file.refused.length === 0 || o.skipRefused === true;
        const created = apply ? await store.suppressions.addMany(customer.id, file.entries, now) : [];
        const report = {
          added: created.filter(Boolean).length,
          already: created.filter((x) => !x).length,
          refused: file.refused,
          applied: apply,
        };
        const lines = [
          ...file.refused.map((r) => `line ${r.line}: refused: ${r.error}`),
          apply
            ? `${report.added} added, ${report.already} already there, ${file.refused.length} refused`
            : `${file.refused.length} line(s) refused: nothing was added (fix them, or give --skip-refused to add the ${file.entries.length} good one(s))`,
        ];
        output(c, report, lines.join('\n'));
        if (!apply) process.exitCode = 1;
      });
    });
  cmd
    .command('export')
    .description('print the whole list, in address order, as CSV (address,reason,created_at,message_id) or JSON lines')
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .addOption(new Option('--format <format>', 'output format').choices(['csv', 'jsonl']).default('csv'))
    .action(async (o: { customer: string; format: 'csv' | 'jsonl' }, c: Command) =>
      withStore(c, async ({ store }) => {
        const customer = await customerNamed(store, o.customer);
        if (o.format === 'csv') process.stdout.write('address,reason,created_at,message_id\n');
        let after: string | undefined;
        for (;;) {
          const rows = await store.suppressions.page(customer.id, after, 1000);
          if (rows.length === 0) break;
          const out = rows.map((r) => {
            const v = { address: r.address, reason: r.reason, created_at: iso(r.created_at), message_id: r.message_id };
            return o.format === 'csv'
              ? [v.address, v.reason, v.created_at ?? '', v.message_id ?? ''].map(csvField).join(',')
              : JSON.stringify(v);
          });
          process.stdout.write(`${out.join('\n')}\n`);
          after = rows[rows.length - 1]!.address;
        }
      }),
    );
}
