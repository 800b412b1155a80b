import type { Command } from 'commander';
import { CliError, customerNamed, output, table, withStore } from '../context.js';

export function inboundCommand(program: Command): void {
  const cmd = program.command('inbound').description('messages received for receiving domains');
  cmd
    .command('list')
    .description('list received messages, newest first: sender, recipients, subject, SPF/DKIM/DMARC results')
    .option('--customer <name>', 'only this customer')
    .option('--limit <n>', 'how many', '50')
    .action(async (o: { customer?: string; limit: string }, c: Command) =>
      withStore(c, async ({ store }) => {
        const { inboundSummary } = await import('../../inbound/view.js');
        const rows = (
          await store.inbound.list({
            limit: Math.max(1, Number(o.limit) || 50),
            ...(o.customer ? { customerId: (await customerNamed(store, o.customer)).id } : {}),
          })
        ).map(inboundSummary);
        output(
          c,
          rows,
          table(
            rows.map((r) => ({
              ...r,
              to: r.to.join(','),
              auth: Object.entries(r.authentication)
                .map(([k, v]) => `${k}=${v}`)
                .join(' '),
            })),
            ['id', 'received_at', 'from', 'to', 'subject', 'auth'],
          ),
        );
      }),
    );
  cmd
    .command('show <id>')
    .description('one received message: headers, authentication results and text (--raw: as received)')
    .option('--raw', 'print the message as received')
    .action(async (id: string, o: { raw?: boolean }, c: Command) =>
      withStore(c, async ({ store }) => {
        const row = await store.inbound.get(id);
        if (!row) throw new CliError(`no received message "${id}"`);
        if (o.raw) return void process.stdout.write(row.raw);
        const { inboundView } = await import('../../inbound/view.js');
        const v = await inboundView(row);
        output(
          c,
          v,
          [
            `${v.id} received ${v.received_at}`,
            `from: ${v.from}`,
            `to: ${(v.to as string[]).join(', ')}`,
            `subject: ${v.subject}`,
            `authentication: ${JSON.stringify(v.authentication)}`,
            '',
            String(v.text ?? ''),
          ].join('\n'),
        );
      }),
    );
}
