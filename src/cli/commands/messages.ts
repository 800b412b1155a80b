import type { Command } from 'commander';
import { withStore, output, table, customerNamed, CliError } from '../context.js';
import { cancelMessage, getMessage, listMessages } from '../../store/messages.js';
import { SEARCH_STATES } from '../../domain/message-search.js';

const STATES: readonly string[] = SEARCH_STATES;

export function messagesCommand(program: Command): void {
  const cmd = program.command('messages').description('the queue and its history, per recipient');
  cmd
    .command('list')
    .description('list messages, newest first')
    .option('--customer <name>', 'only this customer')
    .option('--state <state>', `only messages with a recipient in this state (${STATES.join(', ')})`)
    .option('--limit <n>', 'how many', '50')
    .option('--before <email_id>', 'page: messages older than this email_id')
    .action(async (o: { customer?: string; state?: string; limit: string; before?: string }, c: Command) =>
      withStore(c, ({ db }) => {
        if (o.state !== undefined && !STATES.includes(o.state)) throw new CliError(`--state must be one of ${STATES.join(', ')}`);
        const limit = Number(o.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new CliError('--limit must be 1 to 10000');
        const rows = listMessages(db, {
          limit,
          ...(o.customer !== undefined ? { customerId: customerNamed(db, o.customer).id } : {}),
          ...(o.state !== undefined ? { state: o.state } : {}),
          ...(o.before !== undefined ? { before: Number(o.before) } : {}),
        });
        output(
          c,
          rows,
          table(
            rows.map((r) => ({
              ...r,
              states: Object.entries(r.states)
                .map(([k, v]) => `${k}:${v}`)
                .join(' '),
            })),
            ['email_id', 'message_id', 'customer', 'subject', 'states', 'created_at'],
          ),
        );
      }),
    );
  cmd
    .command('cancel <message_id>')
    .description('cancel a message nothing of which has been sent yet (a scheduled one, typically)')
    .action(async (id: string, _o, c: Command) =>
      withStore(c, ({ db, now }) => {
        const m = getMessage(db, undefined, id);
        if (!m) throw new CliError(`no message "${id}"`);
        const r = cancelMessage(db, undefined, id, now);
        if (r.kind === 'too_late')
          throw new CliError(
            `${m.message_id} cannot be canceled: delivery has begun or ended (${Object.entries(r.states)
              .map(([s, n]) => `${n} ${s}`)
              .join(', ')})`,
          );
        output(c, { message_id: m.message_id, canceled: true }, `${m.message_id} canceled (${m.recipients.length} recipient(s))`);
      }),
    );
  cmd
    .command('show <message_id>')
    .description("one message: each recipient's state, attempts, last response and next attempt, and its events")
    .action(async (id: string, _o, c: Command) =>
      withStore(c, ({ db }) => {
        const m = getMessage(db, undefined, id);
        if (!m) throw new CliError(`no message "${id}"`);
        const human = [
          `${m.message_id} (email_id ${m.email_id})${m.sandbox ? ' [sandbox]' : ''}`,
          `from: ${m.from}`,
          `subject: ${m.subject}`,
          `created: ${m.created_at}`,
          '',
          table(
            m.recipients.map((r) => {
              const last = r.last_response as { code?: number; enhanced_code?: string; message?: string } | null;
              return { ...r, last_response: last?.code ? `${last.code} ${last.enhanced_code ?? ''} ${last.message ?? ''}`.replace(/\s+/g, ' ').slice(0, 80) : null };
            }),
            ['address', 'state', 'attempts', 'next_attempt_at', 'last_response'],
          ),
          '',
          ...m.events.map((e) => `${e.timestamp} ${e.type} ${String((e.data as { recipient?: string }).recipient ?? '')}`),
        ].join('\n');
        output(c, m, human);
      }),
    );
}
