import type { EventType } from '../../domain/events.js';
import { reputationKinds } from '../../domain/reputation.js';
import type { MessageFacts, Transition } from '../../domain/transitions.js';
import { keptByOperator, suppressedEventData } from '../../domain/transitions.js';
import { eventId } from '../../lib/ids.js';
import type { Q } from './db.js';

/** One transition of one recipient, in the order they happened. */
export interface Step {
  m: MessageFacts;
  r: { id: number; address: string };
  t: Transition;
}

export interface EventRow {
  customerId: number;
  type: EventType;
  data: Record<string, unknown>;
  messageRowId: number | null;
  recipientId: number | null;
}

/**
 * Writes recipient transitions (domain/transitions.ts) set-wise, in the caller's transaction:
 * each recipient's row as its last transition leaves it (fields one leaves out keep the earlier
 * one's), the claims released, the suppressions asked for (a sandbox message's never touch the
 * list), and every event in the order it happened, `recipient.suppressed` right after the event
 * that caused it when the suppression is new: what the SQLite engine writes one statement at a
 * time, in six statements whatever the group's size (and a seventh for the reputation counters).
 * The rows are locked and read first: a hold or delete an operator made while the attempt was in
 * flight outlives a deferral (domain/transitions.ts: keptByOperator).
 */
export async function applyTransitions(q: Q, given: Step[], now: number): Promise<void> {
  if (given.length === 0) return;
  const steps = await keptByOperators(q, given);
  const rows = lastRows(steps);
  await updateRecipients(q, rows, now);
  await q.run('DELETE FROM recipient_claims WHERE recipient_id = ANY($1::bigint[])', [[...rows.keys()]]);
  const added = await addSuppressions(q, steps, now);
  await insertEvents(q, stepEvents(steps, added, now), now);
  await countReputation(q, steps, now);
}

/** What the steps count for their customers' reputation (domain/reputation.ts), one statement for the group. */
async function countReputation(q: Q, steps: Step[], now: number): Promise<void> {
  const counts = new Map<string, { customer: number; kind: string; n: number }>();
  for (const { m, t } of steps)
    for (const kind of reputationKinds(m.sandbox, t)) {
      const key = `${m.customerId}:${kind}`;
      const c = counts.get(key) ?? counts.set(key, { customer: m.customerId, kind, n: 0 }).get(key)!;
      c.n++;
    }
  if (counts.size === 0) return;
  const rows = [...counts.values()];
  await q.run(
    `INSERT INTO activity_hourly (customer_id, hour, kind, shard, count)
     SELECT c, $4, k, posthaste_shard(), n FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS x(c, k, n)
     ON CONFLICT (customer_id, hour, kind, shard) DO UPDATE SET count = activity_hourly.count + excluded.count`,
    [rows.map((r) => r.customer), rows.map((r) => r.kind), rows.map((r) => r.n), Math.floor(now / 3_600_000)],
  );
}

/** A recipient row's new values, as its last transition leaves them. */
interface RowUpdate {
  state: string;
  attempts: number | null;
  setNext: boolean;
  next: number | null;
  response: string | null;
  source: string | null;
}

/** Each recipient's row as its last step leaves it: a field a step leaves out keeps the earlier step's value. */
function lastRows(steps: Step[]): Map<number, RowUpdate> {
  const rows = new Map<number, RowUpdate>();
  for (const { r, t } of steps) {
    const prev = rows.get(r.id);
    rows.set(r.id, {
      state: t.row.state,
      attempts: t.row.attempts ?? prev?.attempts ?? null,
      setNext: t.row.nextAttemptAt !== undefined || (prev?.setNext ?? false),
      next: t.row.nextAttemptAt !== undefined ? t.row.nextAttemptAt : (prev?.next ?? null),
      response: t.row.lastResponse ?? prev?.response ?? null,
      source: t.row.sourceIp ?? prev?.source ?? null,
    });
  }
  return rows;
}

/** The steps as the operator's marks on their recipients leave them, the rows locked (in id order, as the queue's commands lock them). */
async function keptByOperators(q: Q, steps: Step[]): Promise<Step[]> {
  const marks = await q.rows<{ id: number | string; state: string; held: boolean }>(
    'SELECT id, state, held_at IS NOT NULL AS held FROM recipients WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE',
    [[...new Set(steps.map((s) => s.r.id))]],
  );
  const byId = new Map(marks.map((m) => [Number(m.id), { canceled: m.state === 'canceled', held: m.held }]));
  return steps.map((s) => {
    const mark = byId.get(s.r.id);
    return mark ? { ...s, t: keptByOperator(s.t, mark) } : s;
  });
}

/** The recipient rows written in one statement; a value left null keeps the row's own. */
async function updateRecipients(q: Q, rows: Map<number, RowUpdate>, now: number): Promise<void> {
  const v = [...rows.values()];
  await q.run(
    `UPDATE recipients r SET state = x.state, attempts = coalesce(x.attempts, r.attempts),
       next_attempt_at = CASE WHEN x.set_next THEN x.next ELSE r.next_attempt_at END,
       held_at = CASE WHEN x.state IN ('queued', 'deferred') THEN r.held_at END,
       last_response = coalesce(x.response, r.last_response), source_ip = coalesce(x.source, r.source_ip), updated_at = $7
     FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bool[], $5::bigint[], $6::text[], $8::text[]) AS x(id, state, attempts, set_next, next, response, source)
     WHERE r.id = x.id`,
    [
      [...rows.keys()],
      v.map((x) => x.state),
      v.map((x) => x.attempts),
      v.map((x) => x.setNext),
      v.map((x) => x.next),
      v.map((x) => x.response),
      now,
      v.map((x) => x.source),
    ],
  );
}

/** Every step's events in order, each new suppression's `recipient.suppressed` right after the event that caused it. */
function stepEvents(steps: Step[], added: Set<string>, now: number): EventRow[] {
  const events: EventRow[] = [];
  const announced = new Set<string>();
  for (const { m, r, t } of steps) {
    for (const e of t.events)
      events.push({ customerId: m.customerId, type: e.type, data: e.data, messageRowId: m.id, recipientId: r.id });
    if (!t.suppress) continue;
    const key = `${m.customerId} ${r.address.toLowerCase()}`;
    // One recipient.suppressed per address: when the suppression is new (always in the sandbox).
    if (m.sandbox || (added.has(key) && !announced.has(key))) {
      if (!m.sandbox) announced.add(key);
      events.push({
        customerId: m.customerId,
        type: 'recipient.suppressed',
        data: suppressedEventData(m, r.address, t.suppress, now),
        messageRowId: m.id,
        recipientId: r.id,
      });
    }
  }
  return events;
}

/** The suppressions the steps ask for (not the sandbox's); the customer-and-address keys that are new. */
async function addSuppressions(q: Q, steps: Step[], now: number): Promise<Set<string>> {
  const wanted = steps.filter((s) => s.t.suppress && !s.m.sandbox);
  if (wanted.length === 0) return new Set();
  const rows = await q.rows<{ customer_id: number; address: string }>(
    `INSERT INTO suppressions (customer_id, address, reason, message_id, created_at)
     SELECT c, a, reason, m, $5 FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[]) WITH ORDINALITY AS x(c, a, reason, m, o) ORDER BY o
     ON CONFLICT (customer_id, address) DO NOTHING RETURNING customer_id, address`,
    [
      wanted.map((s) => s.m.customerId),
      wanted.map((s) => s.r.address.toLowerCase()),
      wanted.map((s) => s.t.suppress),
      wanted.map((s) => s.m.id),
      now,
    ],
  );
  return new Set(rows.map((r) => `${r.customer_id} ${r.address}`));
}

/** Events in the order given (their seq follows it), with envelopes as webhooks send them. */
export async function insertEvents(q: Q, events: EventRow[], now: number): Promise<void> {
  if (events.length === 0) return;
  const iso = new Date(now).toISOString();
  const ids = events.map(() => eventId(now));
  await q.run(
    `INSERT INTO events (id, customer_id, type, message_id, recipient_id, created_at, body)
     SELECT id, c, type, m, r, $6, body FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $7::text[]) WITH ORDINALITY AS x(id, c, type, m, r, body, o) ORDER BY o`,
    [
      ids,
      events.map((e) => e.customerId),
      events.map((e) => e.type),
      events.map((e) => e.messageRowId),
      events.map((e) => e.recipientId),
      now,
      events.map((e, i) => JSON.stringify({ id: ids[i], type: e.type, timestamp: iso, data: e.data })),
    ],
  );
}
