import type { InboundStore, MessageStore } from '../../store.js';
import type { Db } from '../db.js';
import { eventsOfMessage } from '../events.js';
import * as inbound from '../inbound.js';
import * as messages from '../messages.js';
import { deliveriesOfMessage } from '../webhooks.js';

/**
 * Messages and received mail on SQLite: accepting a send and receiving mail are the writes given
 * (store/sqlite/index.ts: the writer thread's group commit when the daemon has one); the reads run
 * on the process's connection.
 */

export function sqliteMessages(db: Db, writes: Pick<MessageStore, 'accept' | 'acceptBatch'>): MessageStore {
  return {
    accept: writes.accept,
    acceptBatch: writes.acceptBatch,
    get: async (customerId, messageId) => messages.getMessage(db, customerId, messageId),
    list: async (opts) => messages.listMessages(db, opts),
    search: async (s) => messages.searchMessages(db, s),
    deliveriesOf: async (messageRowId) => deliveriesOfMessage(db, messageRowId),
    events: async (messageRowId) => eventsOfMessage(db, messageRowId),
    content: async (customerId, messageId) => messages.messageContent(db, customerId, messageId),
  };
}

export function sqliteInbound(db: Db, writes: Pick<InboundStore, 'receive'>): InboundStore {
  return {
    receive: writes.receive,
    checkLimits: async (d, defaults, now) => inbound.checkInboundLimits(db, d, defaults, now),
    recordLimited: async (d, limit, windowEndsAt, now) => inbound.recordLimited(db, d, limit, windowEndsAt, now),
    get: async (id, customerId) => inbound.getInbound(db, id, customerId),
    size: async (id, customerId) => inbound.inboundSize(db, id, customerId),
    list: async (opts) => inbound.listInbound(db, opts),
  };
}
