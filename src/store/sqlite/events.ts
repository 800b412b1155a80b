import type { EventEnvelope, EventType } from '../../domain/events.js';
import { isoTime } from '../../lib/clock.js';
import { eventId } from '../../lib/ids.js';
import type { Db } from './db.js';

/**
 * Writes one event to the outbox. Call it inside the transaction of the state change that
 * causes it, so the change and its event commit (or vanish) together.
 */
export function recordEvent(
  db: Db,
  input: {
    customerId: number;
    type: EventType;
    data: Record<string, unknown>;
    messageRowId?: number;
    recipientId?: number;
    now: number;
  },
): EventEnvelope {
  const envelope: EventEnvelope = {
    id: eventId(input.now),
    type: input.type,
    timestamp: isoTime(input.now),
    data: input.data,
  };
  db.run(
    'INSERT INTO events (id, customer_id, type, message_id, recipient_id, created_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)',
    envelope.id,
    input.customerId,
    input.type,
    input.messageRowId ?? null,
    input.recipientId ?? null,
    input.now,
    JSON.stringify(envelope),
  );
  return envelope;
}

export function eventsOfMessage(db: Db, messageRowId: number): EventEnvelope[] {
  return db
    .all<{ body: string }>('SELECT body FROM events WHERE message_id = ? ORDER BY seq', messageRowId)
    .map((r) => JSON.parse(r.body) as EventEnvelope);
}
