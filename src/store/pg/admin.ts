import type pg from 'pg';
import type { AdminStore, DeliveryStore, NodeStore } from '../store.js';
import type { PgDb } from './db.js';
import { overview } from './overview.js';
import { purgeOld } from './retention.js';
import { pgMigrations } from './schema.js';
import { secret } from './settings.js';
import { countsByState, oldestQueuedAt, status, touchHealth } from './status.js';

/** A lock key of posthaste's own (any fixed number): one node migrates, the others wait for it. */
const MIGRATION_LOCK = 7_370_646_580_000_001;

/**
 * Applies the pending migrations, each in its own transaction, all under one advisory lock held by
 * the session: processes starting at once wait for the first to finish them all, then find
 * nothing to do (the lock goes with the connection if the process dies midway).
 */
async function migrate(db: PgDb, now: number): Promise<number[]> {
  return db.withClient(async (c) => {
    await c.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      return await migrateLocked(c, now);
    } finally {
      await c.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  });
}

async function migrateLocked(c: pg.PoolClient, now: number): Promise<number[]> {
  const applied: number[] = [];
  for (const m of pgMigrations) {
    await c.query('BEGIN');
    try {
      await c.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
      );
      const done = await c.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
      if (done.rowCount === 0) {
        await c.query(m.sql);
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          now,
        ]);
        applied.push(m.version);
      }
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }
  return applied;
}

export function pgAdmin(db: PgDb, delivery: DeliveryStore, nodes: NodeStore): AdminStore {
  return {
    migrate: (now) => migrate(db, now),
    schemaVersions: async () =>
      (await db.rows<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map(
        (r) => r.version,
      ),
    secret: (name, bytes = 32) => secret(db, name, bytes),
    touchHealth: (now) => touchHealth(db, now),
    status: (now) => status(db, delivery, nodes, now),
    countsByState: (table) => countsByState(db, table),
    oldestQueuedAt: (now) => oldestQueuedAt(db, now),
    overview: (customerId, now) => overview(db, delivery, customerId, now),
    purgeOld: (now, days) => purgeOld(db, now, days),
    claimJob: (name, gapMs) => claimJob(db, name, gapMs),
    backup: () =>
      Promise.reject(
        new Error(
          'the store is PostgreSQL: back it up with the database\'s own tools, pg_dump (or a managed service\'s snapshots); see docs/operations.md, "PostgreSQL"',
        ),
      ),
    checks: () => checks(db),
    // PostgreSQL's space is the database server's to manage: limits.max_store_bytes applies to SQLite only.
    setMaxBytes: () => undefined,
    close: () => db.close(),
  };
}

/** The first node to move last_run runs the job; a node whose schedule fires a little later (its clock) finds it moved. */
async function claimJob(db: PgDb, name: string, gapMs: number): Promise<boolean> {
  return (
    (await db.row(
      `INSERT INTO job_runs AS j (name, last_run) VALUES ($1, now())
         ON CONFLICT (name) DO UPDATE SET last_run = excluded.last_run WHERE j.last_run <= excluded.last_run - $2 * interval '1 millisecond'
         RETURNING 1`,
      [name, gapMs],
    )) !== undefined
  );
}

/** The server's settings that make an acknowledged commit less than durable. */
async function checks(db: PgDb): Promise<string[]> {
  const r = await db.row<{ synchronous_commit: string; fsync: string }>(
    "SELECT current_setting('synchronous_commit') AS synchronous_commit, current_setting('fsync') AS fsync",
  );
  const out: string[] = [];
  // A 202 or a 250 is sent once COMMIT returns: with these off, a crash of the database server can lose what was acknowledged.
  if (r?.synchronous_commit === 'off')
    out.push(
      "PostgreSQL has synchronous_commit = off: a 202 or a 250 may be answered for a commit the database server loses if it crashes; set it to on (the default) for posthaste's role or database",
    );
  if (r?.fsync === 'off')
    out.push(
      'PostgreSQL runs with fsync = off: a crash of its machine can lose or corrupt what was acknowledged; use this for tests only',
    );
  return out;
}
