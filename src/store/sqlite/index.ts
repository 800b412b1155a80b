import type { Db } from './db.js';
import { migrate, schemaVersions } from './db.js';
import type { GroupCommit } from './writer/group-commit.js';
import { movable } from './writer/group-commit.js';
import { writerOps } from './writer/ops.js';
import type { Store } from '../store.js';
import * as customers from './customers.js';
import * as keys from './keys.js';
import * as domains from './domains.js';
import * as suppressions from './suppressions.js';
import * as messages from './messages.js';
import * as queue from './queue.js';
import * as recipients from './recipients.js';
import * as destinations from './destinations.js';
import * as inbound from './inbound.js';
import * as webhooks from './webhooks.js';
import * as users from './users.js';
import * as nodes from './nodes.js';
import { overview } from './overview.js';
import { countsByState, oldestQueuedAt, status, touchHealth } from './status.js';
import { purgeOld } from './retention.js';
import { secret } from './settings.js';

import { eventsOfMessage } from './events.js';

/**
 * The SQLite engine behind the store interface: the synchronous functions of this folder, each
 * unit of work in one immediate transaction on the process's connection, except the writes that
 * arrive many at a time (accepting messages, receiving mail, recording webhook attempts), which go
 * to the writer thread's group commit when the daemon has one (the CLI has none: it runs them
 * here). An async method over synchronous code costs one resolved promise.
 */
export function sqliteStore(db: Db, writer?: GroupCommit): Store {
  const tx = <T>(fn: () => T): Promise<T> => Promise.resolve(db.tx(fn));
  return {
    engine: 'sqlite',
    location: db.path,
    admin: {
      migrate: async (now) => migrate(db, now),
      schemaVersions: async () => schemaVersions(db),
      secret: async (name, bytes) => secret(db, name, bytes),
      touchHealth: async (now) => touchHealth(db, now),
      status: async (now) => status(db, now),
      countsByState: async (table) => countsByState(db, table),
      oldestQueuedAt: async (now) => oldestQueuedAt(db, now),
      overview: async (customerId, now) => overview(db, customerId, now),
      purgeOld: async (now, days) => purgeOld(db, now, days),
      // One process holds the file (store/open.ts): its schedule is the only one.
      claimJob: async () => true,
      backup: async (file) => void (await db.backup(file)),
      // synchronous = FULL is set by the engine itself (sqlite/db.ts): nothing to warn of.
      checks: async () => [],
      setMaxBytes: (bytes) => {
        db.setMaxBytes(bytes);
        writer?.setMaxBytes(bytes);
      },
      close: async () => {
        await writer?.close();
        db.close();
      },
    },
    customers: {
      ensureDefault: async (now) => customers.ensureDefaultCustomer(db, now),
      add: async (name, now) => customers.addCustomer(db, name, now),
      find: async (name) => customers.findCustomer(db, name),
      byId: async (id) => customers.customerById(db, id),
      list: async () => customers.listCustomers(db),
      counts: async (id) => customers.customerCounts(db, id),
    },
    keys: {
      create: async (input) => keys.createKey(db, input),
      authenticate: async (presented) => keys.authenticate(db, presented),
      list: async (customerId) => keys.listKeys(db, customerId),
      get: async (id, customerId) => keys.getKey(db, id, customerId),
      revoke: async (id, now) => keys.revokeKey(db, id, now),
      authEpoch: async () => keys.readAuthEpoch(db),
    },
    domains: {
      add: async (input) => domains.addDomain(db, input),
      find: async (name) => domains.findDomain(db, name),
      findSending: async (name) => domains.findSendingDomain(db, name),
      list: async (customerId) => domains.listDomains(db, customerId),
      setVerified: async (id, at) => domains.setVerified(db, id, at),
      setReceiving: async (id, on) => domains.setReceiving(db, id, on),
      remove: async (id) => domains.removeDomain(db, id),
      rotateDkim: async (id, now) => domains.rotateDkim(db, id, now),
      switchDkim: async (id, now) => domains.switchDkim(db, id, now),
      receiving: async (name) => inbound.receivingDomain(db, name),
      inboundLimits: async (id) => inbound.inboundLimitsOf(db, id),
      setInboundLimits: async (id, limits) => inbound.setInboundLimits(db, id, limits),
    },
    suppressions: {
      find: async (customerId, addresses) => suppressions.findSuppressed(db, customerId, addresses),
      add: async (input) => suppressions.addSuppression(db, input),
      list: async (customerId, opts) => suppressions.listSuppressions(db, customerId, opts),
      remove: async (customerId, address) => suppressions.removeSuppression(db, customerId, address),
      search: async (customerId, prefix, limit) => suppressions.searchSuppressions(db, customerId, prefix, limit),
      simulated: async (customerId, addresses, limit) => suppressions.simulatedSuppressions(db, customerId, addresses, limit),
    },
    messages: {
      accept: (input) => (writer ? writer.submit('accept', input, movable(input.request)) : tx(() => writerOps.accept(db, input))),
      acceptBatch: (input) => (writer ? writer.submit('acceptBatch', input) : tx(() => writerOps.acceptBatch(db, input))),
      get: async (customerId, messageId) => messages.getMessage(db, customerId, messageId),
      list: async (opts) => messages.listMessages(db, opts),
      search: async (s) => messages.searchMessages(db, s),
      cancel: async (customerId, messageId, now) => messages.cancelMessage(db, customerId, messageId, now),
      deliveriesOf: async (messageRowId) => webhooks.deliveriesOfMessage(db, messageRowId),
      events: async (messageRowId) => eventsOfMessage(db, messageRowId),
      content: async (customerId, messageId) => messages.messageContent(db, customerId, messageId),
    },
    delivery: {
      claim: async (worker, now, limit) => {
        const rows = queue.claimDue(db, worker, now, limit);
        if (rows.length === 0) return [];
        const loaded = queue.loadMessages(
          db,
          rows.map((r) => r.messageRowId),
        );
        const out = [];
        for (const recipient of rows) {
          const message = loaded.get(recipient.messageRowId);
          if (message) out.push({ recipient, message });
        }
        return out;
      },
      record: (g) =>
        tx(() => {
          for (const { message, recipient, outcome } of g.results) recipients.recordOutcome(db, message, recipient, outcome, g.policy, g.now);
          // After the outcomes: a composed copy is kept only while a recipient may still need it.
          for (const [id, raw] of g.composed) queue.keepComposed(db, id, raw);
          for (const id of new Set(g.results.map((r) => r.message.id))) if (!g.composed.has(id)) queue.dropComposedIfDone(db, id);
          if (g.postpone.length) queue.postponeClaimed(db, g.postpone);
        }),
      recordSandbox: (items, policy, now) =>
        tx(() => {
          for (const { recipient, message, steps } of items)
            for (const step of steps) {
              if (step.kind === 'async_bounce') recipients.recordAsyncBounce(db, message, recipient, step.reply, true, now);
              else if (step.kind === 'complaint')
                recipients.recordComplaint(db, message, recipient, { feedback_type: step.feedbackType, user_agent: step.userAgent, arrival_date: new Date(now).toISOString() }, now);
              else if (step.kind === 'delivered')
                recipients.recordOutcome(db, message, recipient, { kind: 'delivered', reply: step.reply, mx: 'sandbox', tls: false, tlsVerified: false }, policy, now);
              else recipients.recordOutcome(db, message, recipient, step, policy, now);
            }
        }),
      postpone: async (items) => queue.postponeClaimed(db, items),
      releaseClaims: async (ids) => queue.releaseClaimsOf(db, ids),
      releaseAllClaims: async () => queue.releaseClaims(db),
      setThrottle: async (change, now) => (change.kind === 'set' ? destinations.saveThrottle(db, change.record, now) : destinations.clearThrottle(db, change.destination)),
      // One node: one throttling per destination, whoever holds it (DeliveryStore.setThrottle).
      throttles: async () => destinations.listThrottles(db),
      // One process holds the file: there are no other nodes to share a destination with.
      shareDestination: async (_destination, _node, decide) => void decide({ open: 0, minute: 0, started: 0, throttle: undefined }),
      touchUse: async () => undefined,
    },
    inbound: {
      receive: (input) => (writer ? writer.submit('receive', input, movable(input.raw)) : tx(() => writerOps.receive(db, input))),
      checkLimits: async (d, defaults, now) => inbound.checkInboundLimits(db, d, defaults, now),
      recordLimited: async (d, limit, windowEndsAt, now) => inbound.recordLimited(db, d, limit, windowEndsAt, now),
      get: async (id, customerId) => inbound.getInbound(db, id, customerId),
      size: async (id, customerId) => inbound.inboundSize(db, id, customerId),
      list: async (opts) => inbound.listInbound(db, opts),
    },
    webhooks: {
      createEndpoint: async (input) => webhooks.createEndpoint(db, input),
      getEndpoint: async (id, customerId) => webhooks.getEndpoint(db, id, customerId),
      listEndpoints: async (customerId) => webhooks.listEndpoints(db, customerId),
      deleteEndpoint: async (id) => webhooks.deleteEndpoint(db, id),
      disableEndpoint: async (id, reason) => webhooks.disableEndpoint(db, id, reason),
      enableEndpoint: async (id) => webhooks.enableEndpoint(db, id),
      eventById: async (id, customerId) => webhooks.eventById(db, id, customerId),
      listAttempts: async (endpointId, limit, before) => webhooks.listAttempts(db, endpointId, limit, before),
      logAttempt: async (a) => webhooks.logAttempt(db, a),
      startReplay: async (endpointId, eventSeq, now) => webhooks.startReplay(db, endpointId, eventSeq, now),
      finishReplay: (a, deliveryId, state, now) =>
        tx(() => {
          webhooks.logAttempt(db, a, deliveryId);
          webhooks.settleDelivery(db, deliveryId, state, 1, null, now);
        }),
      enabledEndpointIds: async () => webhooks.enabledEndpointIds(db),
      hasDue: async (endpointIds, now) => webhooks.hasDue(db, endpointIds, now),
      claim: async (worker, now, room, release, wait) => {
        const work = () => {
          webhooks.unlockDeliveries(db, release);
          return webhooks.claimDeliveries(db, worker, now, room);
        };
        // Tried, not waited for, on the event loop's connection unless asked: waiting for the
        // writer thread's lock would block the loop in SQLite's busy handler.
        return wait ? db.tx(work) : db.tryTx(work)?.value;
      },
      unlock: (ids) => tx(() => webhooks.unlockDeliveries(db, ids)),
      settleDelivery: async (id, state, attempts, nextAt, now) => webhooks.settleDelivery(db, id, state, attempts, nextAt, now),
      recordAttempts: (batch) => (writer ? writer.submit('webhookAttempts', batch) : tx(() => webhooks.recordAttempts(db, batch))),
      // One process holds the file (store/open.ts): it is the only fan-out there can be.
      leadFanOut: async () => 1,
      resignFanOut: async () => undefined,
      releaseAllClaims: async () => webhooks.releaseDeliveryClaims(db),
      fanOutCursor: async () => webhooks.fanOutCursor(db),
      lastFannedOut: async (after) => webhooks.lastFannedOut(db, after),
      eventsAfter: async (pos, limit) => webhooks.eventsAfter(db, pos, limit),
      hasDelivery: async (eventSeq, endpointId) => webhooks.hasDelivery(db, eventSeq, endpointId),
    },
    users: {
      add: async (input) => users.addUser(db, input),
      find: async (email) => users.findUser(db, email),
      list: async () => users.listUsers(db),
      remove: async (email) => users.removeUser(db, email),
      setPassword: async (email, hash) => users.setPassword(db, email, hash),
      createSession: async (user, customerId, now) => users.createSession(db, user, customerId, now),
      useSession: async (id, now, idleMs) => users.useSession(db, id, now, idleMs),
      showCustomer: async (id, customerId) => users.showCustomer(db, id, customerId),
      endSession: async (id) => users.endSession(db, id),
      purgeSessions: async (now, idleMs) => users.purgeSessions(db, now, idleMs),
    },
    nodes: {
      register: async (node, exclusive) => nodes.registerNode(db, node, exclusive),
      heartbeat: async (node) => nodes.heartbeat(db, node),
      list: async () => nodes.listNodes(db),
      releaseDead: async () => nodes.releaseDead(db),
      leave: async (id) => nodes.leave(db, id),
    },
    // One process on the store: its parts wake each other in memory.
    wakeups: {
      notify: () => undefined,
      listen: async () => ({ close: async () => undefined }),
    },
  };
}
