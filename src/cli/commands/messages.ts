import { type Command, Option } from 'commander';
import { SEARCH_STATES } from '../../domain/message-search.js';
import type { MessageSummary, MessageView } from '../../store/model.js';
import { CliError, customerNamed, output, table, withStore } from '../context.js';

const STATES: readonly string[] = SEARCH_STATES;

export function messagesCommand(program: Command): void {
  const cmd = program.command('messages').description('the queue and its history, per recipient');
  listCommand(cmd);
  cancelCommand(cmd);
  showCommand(cmd);
}

/** `messages list`: a page of messages, newest first, paged as the API pages. */
function listCommand(messages: Command): void {
  messages
    .command('list')
    .description(
      'list messages, newest first; pages as GET /api/v1/emails does: --after the last email_id of the page before',
    )
    .option('--customer <name>', 'only this customer')
    .addOption(new Option('--state <state>', 'only messages with a recipient in this state').choices(STATES))
    .option('--limit <n>', 'how many', '50')
    .option(
      '--after <email_id>',
      'the next page: messages after (older than) this email_id, the last of the page before',
    )
    .addOption(new Option('--before <email_id>', 'deprecated: --after').hideHelp())
    .action(
      async (o: { customer?: string; state?: string; limit: string; after?: string; before?: string }, c: Command) =>
        withStore(c, async ({ store }) => {
          const limit = Number(o.limit);
          if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new CliError('--limit must be 1 to 10000');
          if (o.before !== undefined)
            process.stderr.write('posthaste: --before is deprecated; it is --after, as in the API\n');
          const cursor = o.after ?? o.before;
          if (cursor !== undefined && !/^[1-9]\d{0,15}$/.test(cursor))
            throw new CliError('--after takes an email_id (a positive integer)');
          const page = await store.messages.list({
            limit: limit + 1,
            ...(o.customer !== undefined ? { customerId: (await customerNamed(store, o.customer)).id } : {}),
            ...(o.state !== undefined ? { state: o.state } : {}),
            ...(cursor !== undefined ? { before: Number(cursor) } : {}),
          });
          const rows = page.slice(0, limit);
          const next = page.length > limit ? rows[rows.length - 1]!.email_id : null;
          output(c, rows, pageText(rows, next));
        }),
    );
}

/** `messages cancel`: what of a message has not been sent (the queue's delete of its waiting recipients). */
function cancelCommand(messages: Command): void {
  messages
    .command('cancel <message_id>')
    .description(
      'cancel what of a message has not been sent: its waiting recipients end canceled (as `queue delete --message`)',
    )
    .action(async (id: string, _o, c: Command) =>
      withStore(c, async ({ store, now }) => {
        const m = await store.messages.get(undefined, id);
        if (!m) throw new CliError(`no message "${id}"`);
        const r = await store.queue.cancel(m.email_id, undefined, now);
        if (r.kind === 'not_found') throw new CliError(`no message "${id}"`);
        if (r.kind === 'too_late')
          throw new CliError(
            `${m.message_id} cannot be canceled: delivery has ended (${Object.entries(r.states)
              .map(([s, n]) => `${n} ${s}`)
              .join(', ')})`,
          );
        const flight = r.in_flight ? `; ${r.in_flight} being delivered now finish that attempt first` : '';
        output(
          c,
          { message_id: m.message_id, canceled: true },
          `${m.message_id} canceled (${r.changed} recipient(s)${flight})`,
        );
      }),
    );
}

/** `messages show`: one message, its recipients and its events. */
function showCommand(messages: Command): void {
  messages
    .command('show <message_id>')
    .description("one message: each recipient's state, attempts, last response and next attempt, and its events")
    .action(async (id: string, _o, c: Command) =>
      withStore(c, async ({ store }) => {
        const m = await store.messages.get(undefined, id);
        if (!m) throw new CliError(`no message "${id}"`);
        output(c, m, messageText(m));
      }),
    );
}

/** A page of messages as a table, with the option that shows the next page. */
function pageText(rows: MessageSummary[], next: number | null): string {
  return (
    table(
      rows.map((r) => ({
        ...r,
        states: Object.entries(r.states)
          .map(([k, v]) => `${k}:${v}`)
          .join(' '),
      })),
      ['email_id', 'message_id', 'customer', 'subject', 'states', 'created_at'],
    ) + (next !== null ? `\nmore: --after ${next}` : '')
  );
}

/** One message: its header, each recipient's state and last response, its events. */
function messageText(m: MessageView): string {
  return [
    `${m.message_id} (email_id ${m.email_id})${m.sandbox ? ' [sandbox]' : ''}`,
    `from: ${m.from}`,
    `subject: ${m.subject}`,
    `created: ${m.created_at}`,
    '',
    table(
      m.recipients.map((r) => {
        const last = r.last_response as { code?: number; enhanced_code?: string; message?: string } | null;
        return {
          ...r,
          last_response: last?.code
            ? `${last.code} ${last.enhanced_code ?? ''} ${last.message ?? ''}`.replace(/\s+/g, ' ').slice(0, 80)
            : null,
        };
      }),
      ['address', 'state', 'attempts', 'next_attempt_at', 'last_response'],
    ),
    '',
    ...m.events.map((e) => `${e.timestamp} ${e.type} ${String((e.data as { recipient?: string }).recipient ?? '')}`),
  ].join('\n');
}
