import { type Command, Option } from 'commander';
import { parseDuration } from '../../config/load.js';
import { bareMessageId } from '../../domain/message-search.js';
import {
  type HeldDestination,
  QUEUE_OPS,
  QUEUE_STATES,
  type QueueChange,
  type QueueEntry,
  type QueueOp,
  type QueueSelection,
  type QueueState,
} from '../../store/model.js';
import type { Store } from '../../store/store.js';
import { CliError, customerNamed, iso, output, table, withStore } from '../context.js';

/*
 * `posthaste queue`: the waiting recipients listed, retried, held, released and deleted by
 * message, recipient, destination or customer (docs/operations.md, "The queue"). The rules are
 * the store's (store/queue-ops.ts); this is the door.
 */

/** The selectors an operation takes exactly one of. */
const SELECTORS = ['message', 'recipient', 'destination', 'customer', 'all'] as const;
const PAST: Record<QueueOp, string> = { retry: 'retried', hold: 'held', release: 'released', delete: 'deleted' };
const DESCRIPTIONS: Record<QueueOp, string> = {
  retry:
    "make the selected deferred (or held back) recipients due now and end their destination's pause (no attempt counted, max_queue_time unchanged)",
  hold: 'hold the selected recipients: never tried until released (--destination: also what is accepted for it later)',
  release: 'release held recipients: due now (--destination: the destination is no longer held)',
  delete:
    'delete the selected waiting recipients: they end canceled; delivered, bounced or complained ones never change',
};

interface FilterOptions {
  state?: QueueState;
  olderThan?: string;
  message?: string;
  recipient?: string;
  destination?: string;
  customer?: string;
}

export function queueCommand(program: Command): void {
  const cmd = program
    .command('queue')
    .description('the recipients waiting to be sent: list, retry, hold, release, delete (docs/operations.md)');
  listCommand(cmd);
  for (const op of QUEUE_OPS) opCommand(cmd, op);
}

function selectionOptions(cmd: Command): Command {
  return cmd
    .option('--message <message_id>', 'the recipients of one message (its Message-ID)')
    .option('--recipient <address>', 'one address')
    .option('--destination <name>', 'a destination as throttling names it (e.g. outlook.com; docs/delivery.md)')
    .option('--customer <name>', "one customer's")
    .addOption(new Option('--state <state>', 'only recipients in this state').choices(QUEUE_STATES))
    .option('--older-than <duration>', 'only recipients accepted longer ago than this (e.g. 2h)');
}

/** The selection the options name: the customer and message resolved (unknown ones are errors). */
async function selectionOf(store: Store, o: FilterOptions, now: number): Promise<QueueSelection> {
  const sel: QueueSelection = {};
  if (o.olderThan !== undefined) {
    let ms: number;
    try {
      ms = parseDuration(o.olderThan);
    } catch (e) {
      throw new CliError(`--older-than: ${(e as Error).message}`);
    }
    sel.acceptedBefore = now - ms;
  }
  if (o.state !== undefined) sel.state = o.state;
  if (o.message !== undefined) {
    const m = await store.messages.get(undefined, bareMessageId(o.message));
    if (!m) throw new CliError(`no message with the Message-ID ${o.message}`);
    sel.messageRowId = m.email_id;
  }
  if (o.recipient !== undefined) sel.recipient = o.recipient;
  if (o.destination !== undefined) {
    if (!/^[a-z0-9.-]+$/i.test(o.destination)) throw new CliError('--destination takes a name such as outlook.com');
    sel.destination = o.destination.toLowerCase();
  }
  if (o.customer !== undefined) sel.customerId = (await customerNamed(store, o.customer)).id;
  return sel;
}

/** `queue list`: the waiting recipients, the longest waiting first. */
function listCommand(queue: Command): void {
  selectionOptions(
    queue.command('list').description('list the recipients waiting to be sent, the longest waiting first'),
  )
    .option('--limit <n>', 'how many', '100')
    .action(async (o: FilterOptions & { limit: string }, c: Command) =>
      withStore(c, async ({ store, now }) => {
        const limit = Number(o.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw new CliError('--limit must be 1 to 100000');
        const rows = await store.queue.list(await selectionOf(store, o, now), limit);
        output(c, rows.map(entryJson), listText(rows));
      }),
    );
}

function entryJson(e: QueueEntry) {
  return {
    message_id: e.message_id,
    customer: e.customer,
    recipient: e.address,
    destination: e.destination,
    state: e.state,
    attempts: e.attempts,
    last_response: e.last_response === null ? null : (JSON.parse(e.last_response) as unknown),
    next_attempt_at: iso(e.next_attempt_at),
    held_at: iso(e.held_at),
    accepted_at: iso(e.accepted_at),
    in_flight: e.in_flight,
  };
}

/** A stored reply as one short line. */
function replyLine(stored: string | null): string | null {
  if (stored === null) return null;
  const r = JSON.parse(stored) as { code?: number; enhanced_code?: string; message?: string; suppressed?: string };
  const line = [r.code, r.enhanced_code, r.message].filter((x) => x !== undefined && x !== null && x !== '').join(' ');
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

function listText(rows: QueueEntry[]): string {
  return table(
    rows.map((e) => ({
      message_id: e.message_id,
      recipient: e.address,
      destination: e.destination,
      state: e.in_flight ? `${e.state} (sending)` : e.state,
      attempts: e.attempts,
      last_reply: replyLine(e.last_response),
      next_attempt: iso(e.next_attempt_at),
    })),
    ['message_id', 'recipient', 'destination', 'state', 'attempts', 'last_reply', 'next_attempt'],
  );
}

/** `queue retry|hold|release|delete SELECTOR`. */
function opCommand(queue: Command, op: QueueOp): void {
  selectionOptions(queue.command(op).description(DESCRIPTIONS[op]))
    .option('--all', 'every waiting recipient (narrowed by --state, --older-than)')
    .option('--dry-run', 'say what would change, change nothing')
    .action(async (o: FilterOptions & { all?: boolean; dryRun?: boolean }, c: Command) => {
      const named = SELECTORS.filter((s) => o[s] !== undefined);
      if (named.length === 0)
        throw new CliError(
          `say which recipients to ${op}: one of --message ID, --recipient ADDRESS, --destination NAME, --customer NAME, --all`,
        );
      if (named.length > 1)
        throw new CliError(`one selector at a time: ${named.map((s) => `--${s}`).join(' and ')} were both given`);
      await withStore(c, async ({ store, now }) => {
        const change = await store.queue.apply(op, await selectionOf(store, o, now), now, !!o.dryRun);
        output(c, { ...change, dry_run: !!o.dryRun }, changeText(change, !!o.dryRun));
      });
    });
}

function changeText(ch: QueueChange, dry: boolean): string {
  const n = `${ch.changed} recipient${ch.changed === 1 ? '' : 's'}`;
  const lines = [dry ? `would have ${PAST[ch.op]} ${n} (dry run: nothing changed)` : `${PAST[ch.op]} ${n}`];
  if (ch.in_flight > 0)
    lines.push(`${ch.in_flight} of them being delivered now: that attempt finishes first, the change applies after it`);
  if (ch.rule) {
    const { destination: d, held, changed } = ch.rule;
    const would = dry ? 'would be' : 'is';
    lines.push(
      held
        ? changed
          ? `${d} ${would} held: what is accepted for it is held too, until "posthaste queue release --destination ${d}"`
          : `${d} was already held`
        : changed
          ? `${d} ${would} no longer held`
          : `${d} was not held`,
    );
  }
  return lines.join('\n');
}

/** The held destinations as `status` shows them: its JSON's `held_destinations` and its `held:` lines. */
export function heldStatus(held: HeldDestination[]): {
  json: { held_destinations: Array<{ destination: string; held_at: string | null }> };
  lines: string[];
} {
  return {
    json: { held_destinations: held.map((h) => ({ destination: h.destination, held_at: iso(h.held_at) })) },
    lines:
      held.length === 0
        ? ['held:      no destination']
        : held.map(
            (h) => `held:      ${h.destination} since ${iso(h.held_at)} (posthaste queue release --destination)`,
          ),
  };
}
