import type pg from 'pg';
import t from 'tap';
import { PgDb } from '../../../src/store/pg/db.js';
import { pgStore } from '../../../src/store/pg/index.js';
import { testDatabase } from '../../../support/postgres.js';

// The counters every accept and outcome adds to (activity_hourly, send_usage, inbound_usage) are
// sharded by the writing connection so that nodes do not wait for each other's commits on one row
// (docs/cluster.md, "No hot rows"). Four nodes of ten connections each, every connection with an
// outcome's counter written and not yet committed: none waits for another. With a shard chosen as
// the backend pid modulo 16, forty connections share sixteen rows and at least twenty-four wait.
// PostgreSQL only: SQLite's writer is one connection.

t.test('postgres: forty connections of four nodes hold their counters open at once, none waiting', async (t) => {
  const url = await testDatabase(t);
  const store = pgStore(url, { max: 2 });
  await store.admin.migrate(1);
  await store.customers.ensureDefault(1);
  await store.admin.close();
  const nodes = [0, 1, 2, 3].map(() => new PgDb(url, { max: 10 }));
  t.teardown(() => Promise.all(nodes.map((n) => n.pool.end())));
  const clients: pg.PoolClient[] = [];
  for (const n of nodes) for (let i = 0; i < 10; i++) clients.push(await n.pool.connect());
  t.teardown(() => {
    for (const c of clients) c.release();
  });
  // Each, in a transaction of its own left open: a delivered event, whose trigger adds to the
  // customer's hourly counter under the connection's shard. Waiting for another's row is an error.
  const outcomes = await Promise.allSettled(
    clients.map(async (c, i) => {
      await c.query('BEGIN');
      await c.query("SET LOCAL lock_timeout = '2s'");
      await c.query(
        "INSERT INTO events (id, customer_id, type, created_at, body) VALUES ($1, 1, 'email.delivered', 1, '{}')",
        [`e${i}`],
      );
    }),
  );
  const waited = outcomes.filter((o) => o.status === 'rejected');
  t.equal(waited.length, 0, `${clients.length} connections, ${waited.length} waited for another's counter row`);
  const shards = await Promise.all(
    clients.map(async (c) => (await c.query('SELECT posthaste_shard() AS s')).rows[0].s),
  );
  t.equal(new Set(shards).size, clients.length, 'a shard each');
  for (const c of clients) await c.query('ROLLBACK').catch(() => undefined);
});
