import type { InboundStore, MessageStore, Store, WebhookStore } from '../store.js';
import { sqliteAdmin } from './admin.js';
import { sqliteCustomers } from './customers.js';
import type { Db } from './db.js';
import { sqliteDelivery } from './delivery.js';
import { sqliteDmarc } from './dmarc.js';
import { sqliteDomains } from './domains.js';
import { sqliteInbound } from './inbound.js';
import { sqliteKeys } from './keys.js';
import { sqliteMessages } from './messages.js';
import { sqliteNodes } from './nodes.js';
import { sqliteQueue } from './queue-ops.js';
import { sqliteReputation } from './reputation.js';
import { sqliteSuppressions } from './suppressions.js';
import { sqliteTlsReports } from './tls-reports.js';
import { sqliteUsers } from './users.js';
import { sqliteWakeups } from './wakeups.js';
import { sqliteWarmup } from './warmup.js';
import { recordAttempts } from './webhook-attempts.js';
import { sqliteWebhooks } from './webhooks.js';
import { type GroupCommit, movable } from './writer/group-commit.js';
import { writerOps } from './writer/ops.js';

/**
 * The SQLite engine behind the store interface: the synchronous functions of this folder, each
 * unit of work in one immediate transaction on the process's connection, except the writes that
 * arrive many at a time (accepting messages, receiving mail, recording webhook attempts), which go
 * to the writer thread's group commit when the daemon has one (the CLI has none: it runs them
 * here). An async method over synchronous code costs one resolved promise. Each part of the
 * interface is built by the factory that ends its module, named as PostgreSQL's (store/pg/).
 *
 * `held` says whether a daemon holds the data directory now (store/sqlite/lock.ts), for the nodes
 * listed as live: true in the daemon, which holds it (and in tests of the store itself); the CLI
 * asks the lock (store/open.ts).
 */
export function sqliteStore(db: Db, writer?: GroupCommit, held: () => boolean = () => true): Store {
  const write = writes(db, writer);
  return {
    engine: 'sqlite',
    location: db.path,
    admin: sqliteAdmin(db, writer, held),
    customers: sqliteCustomers(db),
    keys: sqliteKeys(db),
    domains: sqliteDomains(db),
    suppressions: sqliteSuppressions(db),
    messages: sqliteMessages(db, write),
    delivery: sqliteDelivery(db),
    inbound: sqliteInbound(db, write),
    webhooks: sqliteWebhooks(db, write),
    users: sqliteUsers(db),
    nodes: sqliteNodes(db, held),
    wakeups: sqliteWakeups(),
    queue: sqliteQueue(db),
    reputation: sqliteReputation(db),
    dmarc: sqliteDmarc(db),
    tlsReports: sqliteTlsReports(db),
    warmup: sqliteWarmup(db),
  };
}

/**
 * The writes that arrive many at a time: to the writer thread's group commit when the daemon has
 * one; else (the CLI) here, each in one immediate transaction on the process's connection.
 */
function writes(
  db: Db,
  writer: GroupCommit | undefined,
): Pick<MessageStore, 'accept' | 'acceptBatch'> & Pick<InboundStore, 'receive'> & Pick<WebhookStore, 'recordAttempts'> {
  const tx = <T>(fn: () => T): Promise<T> => Promise.resolve(db.tx(fn));
  return {
    accept: (input) =>
      writer ? writer.submit('accept', input, movable(input.request)) : tx(() => writerOps.accept(db, input)),
    acceptBatch: (input) => (writer ? writer.submit('acceptBatch', input) : tx(() => writerOps.acceptBatch(db, input))),
    receive: (input) =>
      writer ? writer.submit('receive', input, movable(input.raw)) : tx(() => writerOps.receive(db, input)),
    recordAttempts: (batch) => (writer ? writer.submit('webhookAttempts', batch) : tx(() => recordAttempts(db, batch))),
  };
}
