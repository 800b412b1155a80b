import type { WebhookStore } from '../../store.js';
import type { Db } from '../db.js';
import * as webhooks from '../webhooks.js';

/**
 * Webhook endpoints, their deliveries and the fan-out on SQLite. Attempts arrive many at a time:
 * recording them is the write given (store/sqlite/index.ts: the writer thread's group commit when
 * the daemon has one).
 */
export function sqliteWebhooks(db: Db, writes: Pick<WebhookStore, 'recordAttempts'>): WebhookStore {
  const tx = <T>(fn: () => T): Promise<T> => Promise.resolve(db.tx(fn));
  return {
    createEndpoint: async (input) => webhooks.createEndpoint(db, input),
    getEndpoint: async (id, customerId) => webhooks.getEndpoint(db, id, customerId),
    listEndpoints: async (customerId) => webhooks.listEndpoints(db, customerId),
    deleteEndpoint: async (id) => webhooks.deleteEndpoint(db, id),
    disableEndpoint: async (id, reason) => webhooks.disableEndpoint(db, id, reason),
    enableEndpoint: async (id) => webhooks.enableEndpoint(db, id),
    updateEndpoint: async (id, changes) => webhooks.updateEndpoint(db, id, changes),
    rotateSecret: async (id, secret, until) => webhooks.rotateSecret(db, id, secret, until),
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
    settleDelivery: async (id, state, attempts, nextAt, now) =>
      webhooks.settleDelivery(db, id, state, attempts, nextAt, now),
    recordAttempts: writes.recordAttempts,
    // One process holds the file (store/open.ts): it is the only fan-out there can be.
    leadFanOut: async () => 1,
    resignFanOut: async () => undefined,
    releaseAllClaims: async () => webhooks.releaseDeliveryClaims(db),
    fanOutCursor: async () => webhooks.fanOutCursor(db),
    lastFannedOut: async (after) => webhooks.lastFannedOut(db, after),
    eventsAfter: async (pos, limit) => webhooks.eventsAfter(db, pos, limit),
    hasDelivery: async (eventSeq, endpointId) => webhooks.hasDelivery(db, eventSeq, endpointId),
  };
}
