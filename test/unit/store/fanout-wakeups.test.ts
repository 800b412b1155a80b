import t from 'tap';
import { createResolver } from '../../../src/lib/dns.js';
import type { Store, WebhookStore } from '../../../src/store/store.js';
import { SafeFetch } from '../../../src/webhooks/safe-fetch.js';
import { waitFor } from '../../../support/wait.js';
import { nodeDispatcher, twoNodes } from '../../helpers/fanout-nodes.js';

// Several nodes on one PostgreSQL: a commit that wrote events wakes every node, but only the
// holder of the fan-out's lease has anything to do with new events. A node not holding it reads
// nothing on those wakeups (it would on every other node's commit), and still asks for the lease
// when its turn to ask comes (docs/cluster.md, "Wakeups"). Two stores on one database play the
// two nodes. PostgreSQL only: SQLite is one process, its fan-out the only one.

/** The store's webhook side, counting every call made to it. */
function counted(s: WebhookStore): { store: WebhookStore; calls: string[] } {
  const calls: string[] = [];
  const store = new Proxy(s, {
    get(target, name, receiver) {
      const v = Reflect.get(target, name, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return v.apply(target, args);
      };
    },
  });
  return { store, calls };
}

t.test('postgres: a node not holding the fan-out lease reads nothing on the other nodes’ wakeups', async (t) => {
  const { a, b } = await twoNodes(t);
  await a.webhooks.createEndpoint({
    customerId: 1,
    url: 'https://hook.example/',
    events: null,
    description: '',
    secret: 'whsec_x',
    now: 0,
  });
  const resolver = createResolver(['127.0.0.1:9']);
  const fetch = new SafeFetch({
    resolver,
    allowPrivate: true,
    timeoutMs: 1000,
    extraCa: [],
  });
  t.teardown(() => fetch.close());
  const node = (store: Store, name: string) => {
    const c = counted(store.webhooks);
    // Polls are a minute away: what runs below runs because of the wakeups.
    const d = nodeDispatcher(store, name, {
      fetch,
      resolver,
      pollInterval: 60_000,
      askEveryMs: 1500,
      webhooks: c.store,
    });
    const stop = new AbortController();
    const running = d.run(stop.signal);
    t.teardown(async () => {
      stop.abort();
      await running;
    });
    return { d, calls: c.calls };
  };
  const nodeA = node(a, 'node-a');
  await waitFor(
    'node a holds the lease',
    () => nodeA.calls.includes('leadFanOut') && nodeA.calls.includes('eventsAfter'),
  );
  const nodeB = node(b, 'node-b');
  await waitFor('node b asked for the lease at its start', () => nodeB.calls.includes('leadFanOut'));
  await new Promise((r) => setTimeout(r, 100));

  nodeA.calls.length = 0;
  nodeB.calls.length = 0;
  for (let i = 0; i < 20; i++) {
    nodeB.d.kickForEvents();
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 100));
  t.same(nodeB.calls, [], 'twenty wakeups, no read by the node not holding the lease');

  nodeA.d.kickForEvents();
  await waitFor('the holder fans out', () => nodeA.calls.includes('eventsAfter'));
  t.pass('the holder, woken, looks for new events');

  // Its turn to ask comes (askEveryMs): the next wakeup asks for the lease (and is refused).
  await new Promise((r) => setTimeout(r, 1600));
  nodeB.d.kickForEvents();
  await waitFor('node b asks again', () => nodeB.calls.includes('leadFanOut'));
  t.notOk(nodeB.calls.includes('eventsAfter'), 'refused, it reads no events');
});
