import type { Resolver } from 'node:dns/promises';
import type { Test } from 'tap';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import type { Store, WebhookStore } from '../../src/store/store.js';
import { Dispatcher } from '../../src/webhooks/dispatcher.js';
import type { SafeFetch } from '../../src/webhooks/safe-fetch.js';
import { WebhookService } from '../../src/webhooks/service.js';
import { startPgCluster } from '../../support/postgres.js';
import { type Nodes, twoNodes as twoNodesOn } from './race.js';

// Two nodes' webhook sides on one PostgreSQL, for the fan-out's tests (docs/cluster.md, "Wakeups"):
// two stores on one database play the two nodes, each with a dispatcher holding the fan-out's
// lease under its own name when it can.

/** Two nodes (helpers/race.ts) on a server of their own: the fan-out's watermark is the server's oldest running transaction, whatever the database. */
export async function twoNodes(t: Test): Promise<Nodes> {
  const cluster = await startPgCluster();
  t.teardown(() => cluster.remove());
  return twoNodesOn(t, 1, cluster.url);
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
