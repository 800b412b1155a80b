import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { utcDay } from '../../domain/tls-report.js';
import {
  type ActivityKind,
  activityOf,
  type Overview,
  overviewFirstHour,
  type QueueCounts,
  queueOf,
  type Status,
} from '../model.js';
import type { AdminStore, DeliveryStore, NodeStore } from '../store.js';
import { throttleStatus } from '../views.js';
import type { PgDb } from './db.js';
import { pgMigrations } from './schema.js';

/** A lock key of posthaste's own (any fixed number): one node migrates, the others wait for it. */
const MIGRATION_LOCK = 7_370_646_580_000_001;
const DAY = 86_400_000;

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

async function overview(db: PgDb, delivery: DeliveryStore, customerId: number, now: number): Promise<Overview> {
  const [rows, counts, throttled] = await Promise.all([
    db.rows<{ hour: number; kind: ActivityKind; count: number }>(
      'SELECT hour, kind, sum(count)::bigint AS count FROM activity_hourly WHERE customer_id = $1 AND hour >= $2 GROUP BY hour, kind',
      [customerId, overviewFirstHour(now)],
    ),
    db.row<{ queued: number; deferred: number; oldest: number | null; backlog: number }>(
      `SELECT (SELECT count(*) FROM recipients WHERE state IN ('queued', 'deferred') AND state = 'queued' AND customer_id = $1)::int AS queued,
              (SELECT count(*) FROM recipients WHERE customer_id = $1 AND state = 'deferred')::int AS deferred,
              (SELECT created_at FROM recipients WHERE customer_id = $1 AND state = 'deferred' ORDER BY message_id LIMIT 1) AS oldest,
              (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE customer_id = $1) AND state = 'pending' AND locked_by IS NULL)::int AS backlog`,
      [customerId],
    ),
    delivery.throttles(),
  ]);
  return {
    ...activityOf(
      rows.map((r) => [r.hour, r.kind, r.count] as const),
      now,
    ),
    queue: { queued: counts!.queued, deferred: counts!.deferred },
    oldestDeferredAt: counts!.oldest,
    webhookBacklog: counts!.backlog,
    throttled,
  };
}

async function countsByState(db: PgDb, table: 'recipients' | 'webhook_deliveries'): Promise<Record<string, number>> {
  const rows = await db.rows<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM ${table} GROUP BY state`,
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

/** The recipients still to be sent, waiting or held by a node (QueueCounts). */
async function queueCounts(db: PgDb): Promise<QueueCounts> {
  const rows = await db.rows<{ state: string; claimed: boolean; n: number }>(
    `SELECT r.state, c.recipient_id IS NOT NULL AS claimed, count(*)::int AS n
       FROM recipients r LEFT JOIN recipient_claims c ON c.recipient_id = r.id
      WHERE r.state IN ('queued', 'deferred') GROUP BY 1, 2`,
  );
  return queueOf(rows.map((r) => [r.state, r.claimed, r.n] as const));
}

async function status(db: PgDb, delivery: DeliveryStore, nodes: NodeStore, now: number): Promise<Status> {
  const iso = (v: number | null) => (typeof v === 'number' ? new Date(v).toISOString() : null);
  const [live, queue, recipients, webhooks, r, throttles] = await Promise.all([
    nodes.list(),
    queueCounts(db),
    countsByState(db, 'recipients'),
    countsByState(db, 'webhook_deliveries'),
    db.row<{
      oldest: number | null;
      next: number | null;
      last_24h: number;
      total: number;
      unmatched: number;
      messages: number;
    }>(
      `SELECT (SELECT min(m.created_at) FROM recipients r JOIN messages m ON m.id = r.message_id WHERE r.state = 'deferred') AS oldest,
              (SELECT min(next_attempt_at) FROM recipients WHERE state IN ('queued', 'deferred')) AS next,
              (SELECT count(*) FROM inbound_messages WHERE created_at > $1)::int AS last_24h,
              (SELECT count(*) FROM inbound_messages)::int AS total,
              (SELECT count(*) FROM inbound_reports WHERE recipient_id IS NULL)::int AS unmatched,
              (SELECT count(*) FROM messages)::int AS messages`,
      [now - DAY],
    ),
    delivery.throttles(),
  ]);
  return {
    nodes: live,
    queue,
    recipients,
    oldest_deferred: iso(r!.oldest),
    next_attempt: iso(r!.next),
    webhooks,
    inbound: { last_24h: r!.last_24h, total: r!.total, reports_unmatched: r!.unmatched },
    messages: r!.messages,
    throttled: throttles.map(throttleStatus),
  };
}

/**
 * Retention, in batches of 1,000 rows per transaction: a long write transaction would hold back
 * the webhook fan-out, which reads only events of transactions older than every one running.
 */
async function purgeOld(db: PgDb, now: number, days: number): Promise<{ messages: number; attempts: number }> {
  // The inbound rate's per-minute counts (up to one row per shard a minute): only the current minute is read.
  await db.run("DELETE FROM inbound_usage WHERE period LIKE 'm:%' AND substr(period, 3)::bigint < $1", [
    Math.floor(now / 60_000) - 60,
  ]);
  // The send quotas' past windows (domain/quotas.ts): only the current ones are read; months are kept.
  await db.run(
    "DELETE FROM send_usage WHERE (left(period, 1) = 'm' AND substr(period, 2)::bigint < $1) OR (left(period, 1) = 'd' AND substr(period, 2)::bigint < $2)",
    [Math.floor(now / 60_000) - 60, Math.floor(now / DAY) - 2],
  );
  // The warm-up's use (store/warmup-store.ts): today's is read, yesterday's kept for a give-back after midnight.
  await db.run('DELETE FROM warmup_use WHERE day < $1', [utcDay(now - DAY)]);
  if (days <= 0) return { messages: 0, attempts: 0 };
  const cutoff = now - days * DAY;
  // TLS reports' counters and sent reports, by day; never the last two, which the report job reads.
  const tlsDay = utcDay(Math.min(cutoff, now - 2 * DAY));
  await db.run('DELETE FROM tls_report_counts WHERE day < $1', [tlsDay]);
  await db.run('DELETE FROM tls_reports_sent WHERE day < $1', [tlsDay]);
  let messages = 0;
  let attempts = 0;
  for (;;) {
    const n = await db.run(
      `UPDATE messages SET raw = NULL, request = convert_to('{"purged":true}', 'UTF8') WHERE id IN (
         SELECT m.id FROM messages m WHERE m.created_at < $1 AND m.request <> convert_to('{"purged":true}', 'UTF8')
           AND NOT EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.state IN ('queued', 'deferred')) LIMIT 1000)`,
      [cutoff],
    );
    messages += n;
    if (n < 1000) break;
  }
  for (;;) {
    const n = await db.run(
      'DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE at < $1 LIMIT 1000)',
      [cutoff],
    );
    attempts += n;
    if (n < 1000) break;
  }
  return { messages, attempts };
}

export function pgAdmin(db: PgDb, delivery: DeliveryStore, nodes: NodeStore): AdminStore {
  return {
    migrate: (now) => migrate(db, now),
    schemaVersions: async () =>
      (await db.rows<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map(
        (r) => r.version,
      ),
    secret: (name, bytes = 32) => secret(db, name, bytes),
    touchHealth: async (now) =>
      void (await db.run('INSERT INTO health (id, at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET at = excluded.at', [
        now,
      ])),
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

/** The secret `name`, created with `bytes` random bytes by the first node to ask for it. */
async function secret(db: PgDb, name: string, bytes: number): Promise<Buffer> {
  await db.run('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    randomBytes(bytes).toString('base64'),
  ]);
  return Buffer.from(
    (await db.row<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name]))!.value,
    'base64',
  );
}

/** When the oldest recipient still to be sent and due became due (its message's creation, or its schedule). */
async function oldestQueuedAt(db: PgDb, now: number): Promise<number | null> {
  return (
    (
      await db.row<{ at: number | null }>(
        `SELECT min(greatest(m.created_at, coalesce(m.scheduled_at, 0))) AS at FROM recipients r JOIN messages m ON m.id = r.message_id
           WHERE r.state IN ('queued', 'deferred') AND (m.scheduled_at IS NULL OR m.scheduled_at <= $1)`,
        [now],
      )
    )?.at ?? null
  );
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
