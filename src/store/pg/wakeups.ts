import type { WakeupStore } from '../store.js';
import type { PgDb } from './db.js';
import { CHANNEL, WakeupListener } from './listener.js';

/**
 * Wakeups between nodes on PostgreSQL: LISTEN/NOTIFY on one channel. A notification is sent
 * after the commit that queued the work, never inside it (NOTIFY in a transaction takes a lock
 * every committing transaction with a NOTIFY waits for), as a statement of its own; the
 * notifications of a few milliseconds are sent together, one statement, each (kind, node) once,
 * and a busy node sends one statement every 50 ms at most.
 * Each node listens on a connection of its own, not from the pool (a pooled connection goes back
 * to others, and a transaction-mode pooler would drop the LISTEN): docs/cluster.md. Polling stays
 * the safety net; a notification lost (the listening connection down) delays work by at most a
 * poll interval.
 */

/** The first notification after a quiet spell goes out after this long, with what came meanwhile. */
const COALESCE_MS = 5;
/**
 * While a node keeps committing work, one statement at most this often: every node hears every
 * other node's notifications (its own too, and drops them), so at one every 5 ms each busy peer
 * would cost every node 200 wakeups a second; a node that is busy claims without being woken, and
 * an idle one hears within this long.
 */
const EVERY_MS = 50;

export function pgWakeups(db: PgDb): WakeupStore {
  const pending = new Set<string>();
  let scheduled = false;
  let sentAt = Number.NEGATIVE_INFINITY;
  const flush = () => {
    scheduled = false;
    sentAt = performance.now();
    const payloads = [...pending];
    pending.clear();
    // Polling finds the work if this is lost (the database away): nothing to wait for or report.
    db.run('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [CHANNEL, payloads]).catch(() => undefined);
  };
  return {
    notify: (from, kind) => {
      pending.add(`${kind} ${from}`);
      if (!scheduled) {
        scheduled = true;
        setTimeout(flush, Math.max(COALESCE_MS, sentAt + EVERY_MS - performance.now()));
      }
    },
    listen: async (self, on, events = {}) => {
      const listener = new WakeupListener(db, self, on, events);
      await listener.start();
      return { close: () => listener.close() };
    },
  };
}
