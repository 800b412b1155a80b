import type { Command } from 'commander';
import { type KeyGrant, parseGrant, SCOPES } from '../../domain/key-scopes.js';
import type { ApiKeyInfo } from '../../store/model.js';
import { DEFAULT_CUSTOMER } from '../../store/model.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';

interface CreateOptions {
  customer: string;
  sandbox?: boolean;
  production?: boolean;
  name: string;
  scopes?: string;
  sendOnly?: boolean;
  full?: boolean;
  fromDomains?: string;
  allowedCidrs?: string;
}

const list = (text: string | undefined): string[] | null =>
  text === undefined
    ? null
    : text
        .split(',')
        .map((w) => w.trim())
        .filter((w) => w !== '');

/** What the key may do: exactly one of --scopes, --send-only, --full (no default), and its restrictions (domain/key-scopes.ts). */
function grantOf(o: CreateOptions): KeyGrant {
  const chosen = [o.scopes !== undefined, !!o.sendOnly, !!o.full].filter(Boolean).length;
  if (chosen !== 1)
    throw new CliError(
      `give exactly one of --full (every scope), --send-only (sending only) or --scopes <list> (some of ${SCOPES.join(', ')})`,
    );
  const parsed = parseGrant({
    scopes: o.full ? ['full'] : o.sendOnly ? ['send'] : (list(o.scopes) ?? []),
    from_domains: list(o.fromDomains),
    allowed_cidrs: list(o.allowedCidrs),
  });
  if ('problems' in parsed)
    throw new CliError(
      Object.entries(parsed.problems)
        .map(([f, p]) => `--${f.replace('_', '-')}: ${p}`)
        .join('; '),
    );
  return parsed.grant;
}

/** `keys create`: exactly one kind and one choice of scopes asked for, the key made for the customer and printed this once. */
async function createKey(o: CreateOptions, c: Command): Promise<void> {
  await withStore(c, async ({ store, now }) => {
    if (!!o.sandbox === !!o.production) throw new CliError('give exactly one of --sandbox or --production');
    const grant = grantOf(o);
    const customer = await customerNamed(store, o.customer);
    const k = await store.keys.create({
      customerId: customer.id,
      kind: o.sandbox ? 'sandbox' : 'production',
      name: o.name,
      grant,
      now,
    });
    const v = {
      id: k.id,
      key: k.key,
      kind: k.kind,
      customer: customer.name,
      name: k.name,
      ...grantView(k),
      created_at: iso(k.created_at),
    };
    output(
      c,
      v,
      `${v.kind} key ${v.id} for customer ${v.customer}, scopes ${v.scopes}:\n\n  ${v.key}\n\nStore it now: it is not shown again.`,
    );
  });
}

/** Scopes and restrictions as `keys` prints them (never the secret). */
const grantView = (k: KeyGrant) => ({
  scopes: k.scopes.join(','),
  from_domains: k.from_domains?.join(',') ?? '',
  allowed_cidrs: k.allowed_cidrs?.join(',') ?? '',
});

export function keysCommand(program: Command): void {
  const cmd = program.command('keys').description('manage API keys (shown once at creation; only a hash is stored)');
  cmd
    .command('create')
    .description('create a key and print it once')
    .option('--customer <name>', 'owning customer', DEFAULT_CUSTOMER)
    .option('--sandbox', 'sandbox key (ph_test_): nothing is delivered, events still fire')
    .option('--production', 'production key (ph_live_): real delivery')
    .option('--full', 'every scope (the full preset)')
    .option('--send-only', 'sending only (the send preset)')
    .option('--scopes <list>', `comma-separated scopes: ${SCOPES.join(', ')}`)
    .option('--from-domains <list>', 'comma-separated: the only From domains the key may send as')
    .option('--allowed-cidrs <list>', 'comma-separated addresses or CIDR blocks the key may be used from')
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
          ...grantView(k),
          created_at: iso(k.created_at),
          last_used_at: iso(k.last_used_at ?? null),
          revoked_at: iso(k.revoked_at),
        }));
        output(
          c,
          rows,
          table(rows, [
            'id',
            'kind',
            'customer',
            'name',
            'scopes',
            'from_domains',
            'allowed_cidrs',
            'created_at',
            'last_used_at',
            'revoked_at',
          ]),
        );
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
