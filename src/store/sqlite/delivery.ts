import { sandboxTransition } from '../model.js';
import type { DeliveryStore } from '../store.js';
import type { Db } from './db.js';
import * as destinations from './destinations.js';
import * as queue from './queue.js';
import * as queueOps from './queue-ops.js';
import * as transitions from './transitions.js';

/** Claims the due recipients and loads their messages (a recipient whose message is gone is left out). */
function claim(db: Db, worker: string, now: number, limit: number) {
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
}

/** A sandbox key's simulated steps, written one by one as their transitions (model/queue.ts, sandboxTransition). */
function recordSandbox(
  db: Db,
  items: Parameters<DeliveryStore['recordSandbox']>[0],
  policy: Parameters<DeliveryStore['recordSandbox']>[1],
  now: number,
): void {
  for (const { recipient, message, steps } of items)
    for (const step of steps) {
      if (step.kind === 'complaint' && transitions.complainedAlready(db, recipient.id)) continue;
      transitions.applyTransition(
        db,
        message,
        recipient,
        sandboxTransition(message, recipient, step, policy, now),
        now,
      );
    }
}

/** Outbound delivery on SQLite: claims, outcomes and destination throttling, for the one node on the file. */
export function sqliteDelivery(db: Db): DeliveryStore {
  const tx = <T>(fn: () => T): Promise<T> => Promise.resolve(db.tx(fn));
  return {
    claim: async (worker, now, limit) => claim(db, worker, now, limit),
    record: (g) =>
      tx(() => {
        for (const { message, recipient, outcome } of g.results)
          transitions.recordOutcome(db, message, recipient, outcome, g.policy, g.now);
        // After the outcomes: a composed copy is kept only while a recipient may still need it.
        for (const [id, raw] of g.composed) queue.keepComposed(db, id, raw);
        for (const id of new Set(g.results.map((r) => r.message.id)))
          if (!g.composed.has(id)) queue.dropComposedIfDone(db, id);
        if (g.postpone.length) queue.postponeClaimed(db, g.postpone);
      }),
    recordSandbox: (items, policy, now) => tx(() => recordSandbox(db, items, policy, now)),
    postpone: async (items) => queue.postponeClaimed(db, items),
    releaseClaims: async (ids) => queue.releaseClaimsOf(db, ids),
    releaseAllClaims: async () => queue.releaseClaims(db),
    setThrottle: async (change, now) =>
      change.kind === 'set'
        ? destinations.saveThrottle(db, change.record, now)
        : destinations.clearThrottle(db, change.destination),
    // One node: one throttling per destination, whoever holds it (DeliveryStore.setThrottle).
    throttles: async () => destinations.listThrottles(db),
    // One process holds the file: there are no other nodes to share a destination with.
    shareDestination: async (_destination, _node, decide) =>
      void decide({ open: 0, minute: 0, started: 0, throttle: undefined }),
    touchUse: async () => undefined,
    heldDestinations: async () => queueOps.heldDestinations(db).map((h) => h.destination),
    retriedAt: async (destinations) => queueOps.retriedAt(db, destinations),
    holdClaimed: async (ids, now) => queueOps.holdClaimed(db, ids, now),
    noteDestination: async (domain, destination, now) => queueOps.noteDestination(db, domain, destination, now),
  };
}
