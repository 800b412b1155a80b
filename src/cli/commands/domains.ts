import type { Command } from 'commander';
import type { Config } from '../../config/schema.js';
import { normaliseDomain } from '../../domain/addresses.js';
import { DKIM_GRACE_MS } from '../../domain/dns-records.js';
import { addDomainFor, domainView, forceVerified, parseDomainName, rotateDkimFor } from '../../domain-setup/manage.js';
import type { dkimStatus, returnPathStatus } from '../../domain-setup/records.js';
import { verifyDomain } from '../../domain-setup/records.js';
import { createResolver } from '../../lib/dns.js';
import type { DomainRow } from '../../store/model.js';
import { DEFAULT_CUSTOMER } from '../../store/model.js';
import type { Store } from '../../store/store.js';
import { CliError, commandLine, customerNamed, iso, output, table, withStore } from '../context.js';
import { recordLines } from './dns.js';

async function view(store: Store, d: DomainRow, config: Config, now: number) {
  const { name, created_at: _c, verified_at: _v, ...v } = domainView(d, config, now);
  return {
    name,
    customer: (await store.customers.byId(d.customer_id))?.name ?? String(d.customer_id),
    ...v,
  };
}

function humanDkim(k: ReturnType<typeof dkimStatus>, cli: string): string[] {
  return [
    `DKIM: signing with selector ${k.signing}`,
    ...(k.next
      ? [
          `      next selector ${k.next}: publish its record, then run "${cli} domains verify"; signing switches once it is found`,
        ]
      : []),
    ...(k.previous
      ? [
          `      previous selector ${k.previous.selector}: retired ${k.previous.switched_at}; keep its record until ${k.previous.remove_record_after}, then remove it`,
        ]
      : []),
  ];
}

function humanRecords(v: Awaited<ReturnType<typeof view>>, cli: string): string {
  return [
    `domain ${v.name} (customer ${v.customer}) verified: ${v.verified} receiving: ${v.receiving}`,
    ...humanDkim(v.dkim, cli),
    humanReturnPath(v.return_path),
    '',
    'Publish these DNS records:',
    ...v.dns_records.flatMap(recordLines),
  ].join('\n');
}

function humanReturnPath(r: ReturnType<typeof returnPathStatus>): string {
  return r.holds
    ? `Return path: ${r.host} holds; the envelope sender is bounces+<token>@${r.envelope_domain} (SPF aligns with the From domain)`
    : `Return path: ${r.host} NOT found; ${r.lost}`;
}

function domainArg(name: string): string {
  const d = parseDomainName(name);
  if (!d.ok) throw new CliError(`"${name}": ${d.error}`);
  return d.value;
}

async function existing(store: Store, name: string): Promise<DomainRow> {
  const d = await store.domains.find(domainArg(name));
  if (!d) throw new CliError(`no domain "${name}" (see "posthaste domains list")`);
  return d;
}

export function domainsCommand(program: Command): void {
  const cmd = program.command('domains').description('manage sending and receiving domains');
  domainLimitsCommand(cmd);
  addCommand(cmd);
  verifyCommand(cmd);
  listCommand(cmd);
  showCommand(cmd);
  rotateDkimCommand(cmd);
  removeCommand(cmd);
}

/** `domains add`: a new domain, its DKIM key made and its DNS records printed. */
function addCommand(domains: Command): void {
  domains
    .command('add <domain>')
    .description('add a domain, generate its DKIM key and print the DNS records to publish')
    .option('--customer <name>', 'owning customer', DEFAULT_CUSTOMER)
    .option('--receiving', 'also receive mail for this domain')
    .action(async (name: string, o: { customer: string; receiving?: boolean }, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const domain = domainArg(name);
        const customer = await customerNamed(store, o.customer);
        const added = await addDomainFor(store.domains, {
          customerId: customer.id,
          name: domain,
          receiving: !!o.receiving,
          now,
        });
        if (added.kind === 'taken') throw new CliError(`domain ${domain} already exists`);
        const v = await view(store, added.domain, config, now);
        output(c, v, `${humanRecords(v, commandLine(c))}\n\nThen run: ${commandLine(c)} domains verify ${domain}`);
      }),
    );
}

/** `domains verify`: the records looked up and the domain marked verified; exit code 1 when it is not. */
function verifyCommand(domains: Command): void {
  domains
    .command('verify <domain>')
    .description('look the DNS records up (through dns.servers) and mark the domain verified')
    .option('--force', 'mark verified without looking (the administrator asserts it)')
    .action(async (name: string, o: { force?: boolean }, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const d = await existing(store, name);
        if (o.force) {
          await forceVerified(store.domains, d, now);
          return output(
            c,
            { name: d.name, verified: true, forced: true, checks: [], dkim_switched_to: null },
            `domain ${d.name} marked verified (forced)`,
          );
        }
        const outcome = await verifyDomain(store.domains, createResolver(config.dns.servers), config, d, now);
        const { verified, checks, switchedTo, dnsError, returnPath } = outcome;
        output(
          c,
          {
            name: d.name,
            verified,
            forced: false,
            checks,
            dkim_switched_to: switchedTo,
            dns_error: dnsError,
            return_path: returnPath,
          },
          verifyText(d, outcome, now),
        );
        if (!verified) process.exitCode = 1;
      }),
    );
}

/** `domains list`: the domains, with their customer and state. */
function listCommand(domains: Command): void {
  domains
    .command('list')
    .description('list domains')
    .option('--customer <name>', 'only this customer')
    .action(async (o: { customer?: string }, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const domains = await store.domains.list(
          o.customer !== undefined ? (await customerNamed(store, o.customer)).id : undefined,
        );
        const rows = [];
        for (const d of domains) {
          const { dns_records: _r, dkim: _k, ...rest } = await view(store, d, config, now);
          rows.push({ ...rest, created_at: iso(d.created_at) });
        }
        output(c, rows, table(rows, ['name', 'customer', 'verified', 'receiving', 'created_at']));
      }),
    );
}

/** `domains show`: one domain and the DNS records to publish. */
function showCommand(domains: Command): void {
  domains
    .command('show <domain>')
    .description('show a domain and its DNS records')
    .action(async (name: string, _o, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const v = await view(store, await existing(store, name), config, now);
        output(c, v, humanRecords(v, commandLine(c)));
      }),
    );
}

/** `domains rotate-dkim`: a new DKIM key under a new selector. */
function rotateDkimCommand(domains: Command): void {
  domains
    .command('rotate-dkim <domain>')
    .description(
      'make a new DKIM key under a new selector and print its record; signing switches to it once "domains verify" finds the record',
    )
    .action(async (name: string, _o, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const r = await rotateDkimFor(store.domains, await existing(store, name), config, now);
        output(
          c,
          r,
          [
            `New DKIM key for ${r.name} under selector ${r.selector}. Publish:`,
            `  ${r.record.name} TXT ${r.record.value}`,
            `Signing goes on with ${r.signing} until "${commandLine(c)} domains verify ${r.name}" finds that record; then it switches.`,
            `After the switch, keep the record of ${r.signing} for ${r.grace_days} days (messages signed with it are still being checked), then remove it.`,
          ].join('\n'),
        );
      }),
    );
}

/** `domains remove`: sending from the domain stops at once. */
function removeCommand(domains: Command): void {
  domains
    .command('remove <domain>')
    .description('remove a domain (sending from it stops at once)')
    .action(async (name: string, _o, c: Command) =>
      withStore(c, async ({ store }) => {
        const d = await existing(store, name);
        await store.domains.remove(d.id);
        output(c, { name: d.name, removed: true }, `domain ${d.name} removed`);
      }),
    );
}

/** What `domains verify` found, record by record, and a DKIM switch it made. */
function verifyText(
  d: DomainRow,
  { verified, checks, switchedTo, dnsError, returnPath }: Awaited<ReturnType<typeof verifyDomain>>,
  now: number,
): string {
  return [
    dnsError
      ? `domain ${d.name}: NOT checked, the DNS server did not answer; it stays ${d.verified_at !== null ? 'verified' : 'not verified'}`
      : `domain ${d.name}: ${verified ? 'verified' : 'NOT verified'}`,
    ...checks.map(
      (k) =>
        `  ${k.found ? 'ok       ' : k.lookup === 'no_answer' ? 'no answer' : 'missing  '} [${k.purpose}] ${k.name}${k.found ? '' : ` (seen: ${k.seen.join(' | ') || 'nothing'})`}`,
    ),
    ...(switchedTo
      ? [
          `DKIM: signing now with selector ${switchedTo}; keep the record of ${d.dkim_selector} until ${new Date(now + DKIM_GRACE_MS).toISOString()} (${DKIM_GRACE_MS / 86_400_000} days), then remove it`,
        ]
      : []),
    humanReturnPath(returnPath),
  ].join('\n');
}

/** `domains limits`: a receiving domain's own inbound limits. */
function domainLimitsCommand(domains: Command): void {
  domains
    .command('limits <domain>')
    .description('set a receiving domain\'s inbound limits ("default" restores the [inbound] value; 0 means none)')
    .option('--rate <per_minute>', 'messages per minute')
    .option('--monthly <count>', 'messages per calendar month')
    .action(async (name: string, o: { rate?: string; monthly?: string }, c: Command) =>
      withStore(c, async ({ store, config }) => {
        const n = normaliseDomain(name);
        const d = n.ok ? await store.domains.find(n.value) : undefined;
        if (!d) throw new CliError(`no domain "${name}"`);
        const value = (v: string | undefined, what: string): number | null | undefined => {
          if (v === undefined) return undefined;
          if (v === 'default') return null;
          const x = Number(v);
          if (!Number.isInteger(x) || x < 0) throw new CliError(`${what} must be a whole number or "default"`);
          return x;
        };
        await store.domains.setInboundLimits(d.id, {
          ratePerMinute: value(o.rate, '--rate'),
          monthlyLimit: value(o.monthly, '--monthly'),
        });
        const own = await store.domains.inboundLimits(d.id);
        const v = {
          name: d.name,
          rate_per_minute: own.ratePerMinute ?? config.inbound.rate_per_minute,
          monthly_limit: own.monthlyLimit ?? config.inbound.monthly_limit,
          overridden: { rate_per_minute: own.ratePerMinute !== null, monthly_limit: own.monthlyLimit !== null },
        };
        output(c, v, `${d.name}: ${v.rate_per_minute}/minute, ${v.monthly_limit}/month (0: unlimited)`);
      }),
    );
}
