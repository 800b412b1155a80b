import type { InboundStore, MessageStore } from '../../store.js';
import type { Db } from '../db.js';
import { eventsOfMessage } from '../events.js';
import * as inbound from '../inbound.js';
import * as messages from '../messages.js';
import { deliveriesOfMessage } from '../webhooks.js';
import type { GroupCommit } from '../writer/group-commit.js';
import { movable } from '../writer/group-commit.js';
import { writerOps } from '../writer/ops.js';

/**
 * Messages and received mail on SQLite: accepting a send and receiving mail go to the writer
 * thread's group commit when the daemon has one (the CLI has none: they run here, in one
 * immediate transaction); the reads run on the process's connection.
 */

export function sqliteMessages(db: Db, writer?: GroupCommit): MessageStore {
  const tx = <T>(fn: () => T): Promise<T> => Promise.resolve(db.tx(fn));
  return {
    accept: (input) =>
      writer ? writer.submit('accept', input, movable(input.request)) : tx(() => writerOps.accept(db, input)),
    acceptBatch: (input) => (writer ? writer.submit('acceptBatch', input) : tx(() => writerOps.acceptBatch(db, input))),
    get: async (customerId, messageId) => messages.getMessage(db, customerId, messageId),
    list: async (opts) => messages.listMessages(db, opts),
    search: async (s) => messages.searchMessages(db, s),
    deliveriesOf: async (messageRowId) => deliveriesOfMessage(db, messageRowId),
    events: async (messageRowId) => eventsOfMessage(db, messageRowId),
    content: async (customerId, messageId) => messages.messageContent(db, customerId, messageId),
  };
}

export function sqliteInbound(db: Db, writer?: GroupCommit): InboundStore {
  return {
    receive: (input) =>
      writer
        ? writer.submit('receive', input, movable(input.raw))
        : Promise.resolve(db.tx(() => writerOps.receive(db, input))),
    checkLimits: async (d, defaults, now) => inbound.checkInboundLimits(db, d, defaults, now),
    recordLimited: async (d, limit, windowEndsAt, now) => inbound.recordLimited(db, d, limit, windowEndsAt, now),
    get: async (id, customerId) => inbound.getInbound(db, id, customerId),
    size: async (id, customerId) => inbound.inboundSize(db, id, customerId),
    list: async (opts) => inbound.listInbound(db, opts),
  };
}
