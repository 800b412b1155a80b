import type { Db } from './db.js';
import { eventId } from '../lib/ids.js';
import { isoTime } from '../lib/clock.js';
import type { EventEnvelope, EventType } from '../domain/events.js';

/**
 * Writes one event to the outbox. Call it inside the transaction of the state change that
 * causes it, so the change and its event commit (or vanish) together.
 */
export function recordEvent(
  db: Db,
  input: { customerId: number; type: EventType; data: Record<string, unknown>; messageRowId?: number; recipientId?: number; now: number },
): EventEnvelope {
  const envelope: EventEnvelope = { id: eventId(input.now), type: input.type, timestamp: isoTime(input.now), data: input.data };
  db.run(
    db.q.insertInto('events').values({
      id: envelope.id,
      customer_id: input.customerId,
      type: input.type,
      message_id: input.messageRowId ?? null,
      recipient_id: input.recipientId ?? null,
      created_at: input.now,
      body: JSON.stringify(envelope),
    }),
  );
  return envelope;
}

export function eventsOfMessage(db: Db, messageRowId: number): EventEnvelope[] {
  return db
    .all(db.q.selectFrom('events').select('body').where('message_id', '=', messageRowId).orderBy('seq'))
    .map((r) => JSON.parse(r.body) as EventEnvelope);
}
