import type { Resolver } from 'node:dns/promises';
import pg from 'pg';
import type { Test } from 'tap';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { pgStore } from '../../src/store/pg/index.js';
import type { Store, WebhookStore } from '../../src/store/store.js';
import { Dispatcher } from '../../src/webhooks/dispatcher.js';
import type { SafeFetch } from '../../src/webhooks/safe-fetch.js';
import { WebhookService } from '../../src/webhooks/service.js';
import { startPgCluster } from '../../support/postgres.js';

// Two nodes' webhook sides on one PostgreSQL, for the fan-out's tests (docs/cluster.md, "Wakeups"):
// two stores on one database play the two nodes, each with a dispatcher holding the fan-out's
// lease under its own name when it can.

/** A server of its own (the fan-out's watermark is the server's oldest running transaction, whatever the database), two stores on it, and a client for the test's own SQL. */
export async function twoNodes(t: Test): Promise<{ url: string; a: Store; b: Store; sql: pg.Client }> {
  const cluster = await startPgCluster();
  t.teardown(() => cluster.remove());
  const a = pgStore(cluster.url, { max: 4 });
  const b = pgStore(cluster.url, { max: 4 });
  t.teardown(async () => {
    await a.admin.close();
    await b.admin.close();
  });
  await a.admin.migrate(1);
  await b.admin.migrate(1);
  await a.customers.ensureDefault(1);
  const sql = new pg.Client({ connectionString: cluster.url });
  await sql.connect();
  t.teardown(() => sql.end());
  return { url: cluster.url, a, b, sql };
}

export interface NodeDispatcherOptions {
  fetch: SafeFetch;
  resolver: Resolver;
  /** How often the dispatcher looks without being woken. */
  pollInterval: number;
  /** How often a node not holding the lease asks for it (the dispatcher's default when absent). */
  askEveryMs?: number;
  /** The store's webhook side as the dispatcher sees it (the store's own when absent). */
  webhooks?: WebhookStore;
}

/** Node `name`'s dispatcher on `store`. */
export function nodeDispatcher(store: Store, name: string, o: NodeDispatcherOptions): Dispatcher {
  return new Dispatcher({
    store: o.webhooks ?? store.webhooks,
    clock: systemClock,
    log: silentLogger(),
    service: new WebhookService(store.webhooks, systemClock, o.fetch, o.resolver, true),
    worker: name,
    fanOutLease: { holder: name, ttlMs: 60_000, ...(o.askEveryMs !== undefined ? { askEveryMs: o.askEveryMs } : {}) },
    concurrency: 8,
    perEndpoint: 4,
    pollInterval: o.pollInterval,
    flushInterval: 5,
  });
}
