import { type Command, InvalidArgumentError, Option } from 'commander';
import { Problems } from '../../domain/errors.js';
import { EVENT_TYPES, type EventType } from '../../domain/events.js';
import { systemClock } from '../../lib/clock.js';
import { DEFAULT_CUSTOMER } from '../../store/model.js';
import type { Store } from '../../store/store.js';
import type { createWebhookService as CreateWebhookService } from '../../webhooks/create.js';
import { type AttemptOutcome, endpointView, rotationView } from '../../webhooks/service.js';
import { CliError, customerNamed, output, table, withStore } from '../context.js';

async function endpointOf(store: Store, id: string) {
  const e = await store.webhooks.getEndpoint(id);
  if (!e) throw new CliError(`no webhook endpoint "${id}" (see "posthaste webhooks list")`);
  return e;
}

function outcomeText(o: AttemptOutcome): string {
  return `${o.success ? 'ok' : 'FAILED'}: ${o.type} ${o.event_id} -> ${o.status ?? o.error} in ${o.duration_ms} ms`;
}

/** The webhook service (and the daemon's modules it is built from), loaded only by the commands that send. */
const webhookService = async (): Promise<typeof CreateWebhookService> =>
  (await import('../../webhooks/create.js')).createWebhookService;

/** --events: a comma-separated list of event types, each checked as commander checks choices. */
function eventList(value: string): string[] {
  const types = value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  const unknown = types.filter((x) => !EVENT_TYPES.includes(x as EventType));
  if (types.length === 0 || unknown.length > 0)
    throw new InvalidArgumentError(
      `${unknown.length > 0 ? `unknown: ${unknown.join(', ')}. ` : ''}Allowed choices are ${EVENT_TYPES.join(', ')}.`,
    );
  return types;
}

/** The administrator's view of webhooks: endpoints, their delivery log, test and replay. */
export function webhooksCommand(program: Command): void {
  const cmd = program.command('webhooks').description('webhook endpoints, their delivery log, test events and replays');
  createCommand(cmd);
  listCommand(cmd);
  updateCommand(cmd);
  rotateSecretCommand(cmd);
  deleteCommand(cmd);
  testCommand(cmd);
  deliveriesCommand(cmd);
  replayCommand(cmd);
}

/** `webhooks create`: a new endpoint, its secret printed once. */
function createCommand(webhooks: Command): void {
  webhooks
    .command('create <url>')
    .description('add an endpoint (prints its secret once)')
    .option('--customer <name>', 'owning customer', DEFAULT_CUSTOMER)
    .option('--events <types>', `comma-separated event types (default: all): ${EVENT_TYPES.join(', ')}`, eventList)
    .option('--description <text>', 'a note', '')
    .action(async (url: string, o: { customer: string; events?: string[]; description: string }, c: Command) =>
      withStore(c, async ({ store, config }) => {
        const customer = await customerNamed(store, o.customer);
        const service = (await webhookService())(store.webhooks, config, systemClock);
        try {
          const input = await service.validate({
            url,
            ...(o.events ? { events: o.events } : {}),
            description: o.description,
          });
          if (input instanceof Problems) throw new CliError(problemText(input));
          const v = endpointView(await service.create(customer.id, input), true);
          output(c, v, `endpoint ${v.id} -> ${v.url}\nsecret (shown once): ${v.secret}`);
        } finally {
          await service.fetch.close();
        }
      }),
    );
}

/** `webhooks list`: the endpoints, without their secrets. */
function listCommand(webhooks: Command): void {
  webhooks
    .command('list')
    .description('list endpoints (no secrets)')
    .option('--customer <name>', 'only this customer')
    .action(async (o: { customer?: string }, c: Command) =>
      withStore(c, async ({ store }) => {
        const names = new Map((await store.customers.list()).map((x) => [x.id, x.name]));
        const rows = (
          await store.webhooks.listEndpoints(
            o.customer !== undefined ? (await customerNamed(store, o.customer)).id : undefined,
          )
        ).map((e): Record<string, unknown> => ({ ...endpointView(e), customer: names.get(e.customerId) }));
        const human = rows.map((r) => {
          const events = r.events as string[];
          return { ...r, events: events.length === EVENT_TYPES.length ? 'all' : events.join(',') };
        });
        output(c, rows, table(human, ['id', 'customer', 'url', 'events', 'enabled', 'created_at']));
      }),
    );
}

/** `webhooks update`: url, events, description or enabled changed, each validated as at creation. */
function updateCommand(webhooks: Command): void {
  webhooks
    .command('update <id>')
    .description('change an endpoint: --url, --events (or "all"), --description, --enabled true|false')
    .option('--url <url>', 'the new URL')
    .option('--events <types>', `comma-separated event types, or "all": ${EVENT_TYPES.join(', ')}`, (v: string) =>
      // "all": an empty list here, every type (events null) below.
      v === 'all' ? [] : eventList(v),
    )
    .option('--description <text>', 'a note')
    .addOption(new Option('--enabled <bool>', 'enable or disable').choices(['true', 'false']))
    .action(
      async (id: string, o: { url?: string; events?: string[]; description?: string; enabled?: string }, c: Command) =>
        withStore(c, async ({ store, config }) => {
          const e = await endpointOf(store, id);
          const service = (await webhookService())(store.webhooks, config, systemClock);
          try {
            const changes = await service.validateChanges({
              ...(o.url !== undefined ? { url: o.url } : {}),
              ...(o.events !== undefined ? { events: o.events.length ? o.events : null } : {}),
              ...(o.description !== undefined ? { description: o.description } : {}),
              ...(o.enabled !== undefined ? { enabled: o.enabled === 'true' } : {}),
            });
            if (changes instanceof Problems) throw new CliError(problemText(changes));
            const v = endpointView((await store.webhooks.updateEndpoint(e.id, changes))!);
            output(c, v, `endpoint ${v.id} -> ${v.url} (${v.enabled ? 'enabled' : 'disabled'})`);
          } finally {
            await service.fetch.close();
          }
        }),
    );
}

/** `webhooks rotate-secret`: a new secret printed once; the old one signs beside it for webhooks.secret_grace. */
function rotateSecretCommand(webhooks: Command): void {
  webhooks
    .command('rotate-secret <id>')
    .description(
      'replace the signing secret (prints the new one once; the old one signs too for webhooks.secret_grace)',
    )
    .action(async (id: string, _o, c: Command) =>
      withStore(c, async ({ store, config }) => {
        const service = (await webhookService())(store.webhooks, config, systemClock);
        try {
          const r = await service.rotateSecret(await endpointOf(store, id));
          const v = rotationView(r!);
          output(
            c,
            v,
            `endpoint ${v.id}: new secret (shown once): ${v.secret}\nthe old secret signs too until ${v.previous_secret_expires_at}`,
          );
        } finally {
          await service.fetch.close();
        }
      }),
    );
}

/** A validation's problems on one line. */
const problemText = (p: Problems): string =>
  Object.entries(p.details)
    .map(([k, v]) => `${k} ${v.join('; ')}`)
    .join('; ');

/** `webhooks delete`: an endpoint and its delivery log. */
function deleteCommand(webhooks: Command): void {
  webhooks
    .command('delete <id>')
    .description('remove an endpoint and its delivery log')
    .action(async (id: string, _o, c: Command) =>
      withStore(c, async ({ store }) => {
        await store.webhooks.deleteEndpoint((await endpointOf(store, id)).id);
        output(c, { id, deleted: true }, `endpoint ${id} deleted`);
      }),
    );
}

/** `webhooks test`: a sample event sent now; exit code 1 when it fails. */
function testCommand(webhooks: Command): void {
  webhooks
    .command('test <id>')
    .description('send a sample event now and show the outcome')
    .addOption(new Option('--type <type>', 'event type').choices(EVENT_TYPES).default('email.delivered'))
    .action(async (id: string, o: { type: string }, c: Command) =>
      withStore(c, async ({ store, config }) => {
        const service = (await webhookService())(store.webhooks, config, systemClock);
        try {
          const r = await service.test(await endpointOf(store, id), o.type as EventType);
          output(c, r, outcomeText(r));
          if (!r.success) process.exitCode = 1;
        } finally {
          await service.fetch.close();
        }
      }),
    );
}

/** `webhooks deliveries`: an endpoint's recent attempts. */
function deliveriesCommand(webhooks: Command): void {
  webhooks
    .command('deliveries <id>')
    .description('recent attempts: event, attempt, time, HTTP status or error, duration, response start')
    .option('--limit <n>', 'how many', '50')
    .action(async (id: string, o: { limit: string }, c: Command) =>
      withStore(c, async ({ store }) => {
        const rows = (
          await store.webhooks.listAttempts(
            (
              await endpointOf(store, id)
            ).id,
            Math.max(1, Math.min(1000, Number(o.limit) || 50)),
          )
        ).map(({ cursor: _c, ...r }) => r);
        output(
          c,
          rows,
          table(
            rows.map((r) => ({ ...r, result: r.status ?? r.error, response: (r.response ?? '').slice(0, 40) })),
            ['at', 'event_id', 'event_type', 'kind', 'attempt', 'result', 'duration_ms', 'response'],
          ),
        );
      }),
    );
}

/** `webhooks replay`: a past event sent again with its webhook-id; exit code 1 when it fails. */
function replayCommand(webhooks: Command): void {
  webhooks
    .command('replay <id> <event_id>')
    .description('send a past event to the endpoint again, with the same webhook-id')
    .action(async (id: string, eventIdArg: string, _o, c: Command) =>
      withStore(c, async ({ store, config }) => {
        const e = await endpointOf(store, id);
        const event = await store.webhooks.eventById(eventIdArg, e.customerId);
        if (!event) throw new CliError(`no event "${eventIdArg}" for this endpoint's customer`);
        const service = (await webhookService())(store.webhooks, config, systemClock);
        try {
          const r = await service.replay(e, event);
          output(c, r, outcomeText(r));
          if (!r.success) process.exitCode = 1;
        } finally {
          await service.fetch.close();
        }
      }),
    );
}
