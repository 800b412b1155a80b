import pg from 'pg';
import type { Test } from 'tap';
import { pgStore } from '../../src/store/pg/index.js';
import type { Store } from '../../src/store/store.js';
import { testDatabase } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';

// Two nodes on one real PostgreSQL racing for the same thing (docs/cluster.md, "What holds for
// every node"). Where a race is decided by a lock, a third connection holds that lock until both
// racers wait on it (seen in pg_stat_activity), then lets them go: the interleaving that matters,
// every run.

export interface Nodes {
  url: string;
  a: Store;
  b: Store;
  sql: pg.Client;
}

/** Two stores on a database of the run's cluster, or on `url` (a server of the test's own), migrated, with the default customer. */
export async function twoNodes(t: Test, now = 1_000_000, url?: string): Promise<Nodes> {
  url ??= await testDatabase(t);
  const a = pgStore(url, { max: 4 });
  const b = pgStore(url, { max: 4 });
  t.teardown(async () => {
    await a.admin.close();
    await b.admin.close();
  });
  await a.admin.migrate(now);
  await a.customers.ensureDefault(now);
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  t.teardown(() => sql.end());
  return { url, a, b, sql };
}

/**
 * Runs the racers while a third connection holds `lock` (a statement run in its open
 * transaction); lets them go once `waiting` of them wait for a lock, and gives their answers.
 */
export async function released<T>(
  n: Nodes,
  lock: string,
  waiting: number,
  racers: () => Array<Promise<T>>,
): Promise<T[]> {
  const gate = new pg.Client({ connectionString: n.url });
  await gate.connect();
  try {
    await gate.query('BEGIN');
    await gate.query(lock);
    const running = racers();
    // A racer that fails early must not leave the gate shut: its rejection shows first.
    const settled = Promise.allSettled(running);
    await Promise.race([
      waitFor(
        `${waiting} transactions waiting for the lock`,
        async () =>
          Number(
            (
              await n.sql.query(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
              )
            ).rows[0].count,
          ) >= waiting,
      ),
      settled.then(() => {
        throw new Error('a racer finished while the lock was held');
      }),
    ]);
    await gate.query('COMMIT');
    return await Promise.all(running);
  } finally {
    await gate.end();
  }
}
