import type { Command } from 'commander';
import { withStore, output, table, customerNamed, CliError, iso } from '../context.js';
import { DEFAULT_CUSTOMER } from '../../store/customers.js';
import { addSuppression, listSuppressions, removeSuppression } from '../../store/suppressions.js';
import { getInbound, listInbound, setInboundLimits } from '../../store/inbound.js';
import { findDomain } from '../../store/domains.js';
import { parseAddrSpec, normaliseDomain } from '../../domain/addresses.js';
import { inboundView, inboundSummary } from '../../inbound/view.js';

export function suppressionsCommand(program: Command): void {
  const cmd = program.command('suppressions').description("a customer's suppression list (addresses compared case-insensitively)");
  cmd
    .command('list')
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .option('--reason <reason>', 'hard_bounce, spam_complaint or manual')
    .option('--limit <n>', 'how many', '100')
    .action(async (o: { customer: string; reason?: string; limit: string }, c: Command) =>
      withStore(c, ({ db }) => {
        const rows = listSuppressions(db, customerNamed(db, o.customer).id, { limit: Math.max(1, Number(o.limit) || 100), ...(o.reason ? { reason: o.reason } : {}) }).map((r) => ({ ...r, created_at: iso(r.created_at) }));
        output(c, rows, table(rows, ['address', 'reason', 'message_id', 'created_at']));
      }),
    );
  cmd
    .command('add <address>')
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .action(async (address: string, o: { customer: string }, c: Command) =>
      withStore(c, ({ db, now }) => {
        const p = parseAddrSpec(address.trim());
        if (!p.ok) throw new CliError(`"${address}" ${p.error}`);
        const created = addSuppression(db, { customerId: customerNamed(db, o.customer).id, address: p.value.address, reason: 'manual', now });
        output(c, { address: p.value.address.toLowerCase(), reason: 'manual', created }, created ? `${p.value.address} suppressed` : `${p.value.address} was already suppressed`);
      }),
    );
  cmd
    .command('remove <address>')
    .option('--customer <name>', 'customer', DEFAULT_CUSTOMER)
    .action(async (address: string, o: { customer: string }, c: Command) =>
      withStore(c, ({ db }) => {
        if (!removeSuppression(db, customerNamed(db, o.customer).id, address)) throw new CliError(`${address} is not on the suppression list`);
        output(c, { address: address.toLowerCase(), deleted: true }, `${address} removed from the suppression list`);
      }),
    );
}

export function inboundCommand(program: Command): void {
  const cmd = program.command('inbound').description('messages received for receiving domains');
  cmd
    .command('list')
    .option('--customer <name>', 'only this customer')
    .option('--limit <n>', 'how many', '50')
    .action(async (o: { customer?: string; limit: string }, c: Command) =>
      withStore(c, ({ db }) => {
        const rows = listInbound(db, { limit: Math.max(1, Number(o.limit) || 50), ...(o.customer ? { customerId: customerNamed(db, o.customer).id } : {}) }).map(inboundSummary);
        output(c, rows, table(rows.map((r) => ({ ...r, to: r.to.join(','), auth: Object.entries(r.authentication).map(([k, v]) => `${k}=${v}`).join(' ') })), ['id', 'received_at', 'from', 'to', 'subject', 'auth']));
      }),
    );
  cmd
    .command('show <id>')
    .option('--raw', 'print the message as received')
    .action(async (id: string, o: { raw?: boolean }, c: Command) =>
      withStore(c, async ({ db }) => {
        const row = getInbound(db, id);
        if (!row) throw new CliError(`no received message "${id}"`);
        if (o.raw) return void process.stdout.write(row.raw);
        const v = await inboundView(row);
        output(c, v, [`${v.id} received ${v.received_at}`, `from: ${v.from}`, `to: ${(v.to as string[]).join(', ')}`, `subject: ${v.subject}`, `authentication: ${JSON.stringify(v.authentication)}`, '', String(v.text ?? '')].join('\n'));
      }),
    );
}

export function domainLimitsCommand(domains: Command): void {
  domains
    .command('limits <domain>')
    .description('set a receiving domain\'s inbound limits ("default" restores the [inbound] value; 0 means none)')
    .option('--rate <per_minute>', 'messages per minute')
    .option('--monthly <count>', 'messages per calendar month')
    .action(async (name: string, o: { rate?: string; monthly?: string }, c: Command) =>
      withStore(c, ({ db, config }) => {
        const n = normaliseDomain(name);
        const d = n.ok ? findDomain(db, n.value) : undefined;
        if (!d) throw new CliError(`no domain "${name}"`);
        const value = (v: string | undefined, what: string): number | null | undefined => {
          if (v === undefined) return undefined;
          if (v === 'default') return null;
          const x = Number(v);
          if (!Number.isInteger(x) || x < 0) throw new CliError(`${what} must be a whole number or "default"`);
          return x;
        };
        setInboundLimits(db, d.id, { ratePerMinute: value(o.rate, '--rate'), monthlyLimit: value(o.monthly, '--monthly') });
        const row = db.statement('SELECT inbound_rate_per_minute AS r, inbound_monthly_limit AS m FROM domains WHERE id = ?').get(d.id) as { r: number | null; m: number | null };
        const v = { name: d.name, rate_per_minute: row.r ?? config.inbound.rate_per_minute, monthly_limit: row.m ?? config.inbound.monthly_limit, overridden: { rate_per_minute: row.r !== null, monthly_limit: row.m !== null } };
        output(c, v, `${d.name}: ${v.rate_per_minute}/minute, ${v.monthly_limit}/month (0: unlimited)`);
      }),
    );
}
