import pg from 'pg';
import type { PgDb } from './db.js';
import type { WakeupKind, WakeupStore } from '../store.js';

/**
 * Wakeups between nodes on PostgreSQL: LISTEN/NOTIFY on one channel. A notification is sent
 * after the commit that queued the work, never inside it (NOTIFY in a transaction takes a lock
 * every committing transaction with a NOTIFY waits for), as a statement of its own; the
 * notifications of a few milliseconds are sent together, one statement, each (kind, node) once.
 * Each node listens on a connection of its own, not from the pool (a pooled connection goes back
 * to others, and a transaction-mode pooler would drop the LISTEN): docs/cluster.md. Polling stays
 * the safety net; a notification lost (the listening connection down) delays work by at most a
 * poll interval.
 */

export const CHANNEL = 'posthaste_wakeup';
/** Notifications of this long are sent together. */
const COALESCE_MS = 5;
const KINDS: readonly WakeupKind[] = ['outbound', 'webhooks'];

export function pgWakeups(db: PgDb): WakeupStore {
  const pending = new Set<string>();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
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
        setTimeout(flush, COALESCE_MS);
      }
    },
    listen: async (self, on, events = {}) => {
      let closed = false;
      let client: pg.Client | null = null;
      let retry: NodeJS.Timeout | null = null;
      let wait = 500;
      const connect = async (): Promise<void> => {
        const c = new pg.Client({ ...db.client, application_name: `${db.client.application_name ?? 'posthaste'} (listen)`, keepAlive: true, connectionTimeoutMillis: 5_000 });
        let lost = false;
        const onLost = (e?: Error) => {
          if (lost || closed) return;
          lost = true;
          client = null;
          events.lost?.(e ?? new Error('connection ended'));
          reconnect();
        };
        c.on('error', onLost);
        c.on('end', () => onLost());
        c.on('notification', (m) => {
          const [kind, from] = (m.payload ?? '').split(' ');
          if (from !== self && (KINDS as readonly string[]).includes(kind ?? '')) on(kind as WakeupKind);
        });
        try {
          await c.connect();
          await c.query(`LISTEN ${CHANNEL}`);
        } catch (e) {
          lost = true; // not yet listening: the caller tries again
          // Not awaited: ending a client whose connection never opened may never settle.
          c.end().catch(() => undefined);
          throw e;
        }
        if (closed) {
          c.end().catch(() => undefined);
          return;
        }
        client = c;
      };
      const reconnect = () => {
        if (closed || retry) return;
        retry = setTimeout(async () => {
          retry = null;
          try {
            await connect();
            wait = 500;
            events.back?.();
            // What was said while the connection was down was not heard: look now.
            for (const kind of KINDS) on(kind);
          } catch {
            wait = Math.min(wait * 2, 30_000);
            reconnect();
          }
        }, wait);
        retry.unref();
      };
      try {
        await connect();
      } catch (e) {
        events.lost?.(e as Error);
        reconnect();
      }
      return {
        close: async () => {
          closed = true;
          if (retry) clearTimeout(retry);
          const c = client;
          client = null;
          if (c) await Promise.race([c.end().catch(() => undefined), new Promise((r) => setTimeout(r, 2_000).unref())]);
        },
      };
    },
  };
}
