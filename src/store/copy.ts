import type { Config } from '../config/schema.js';
import type { Q } from './pg/db.js';
import { PgDb, redactUrl } from './pg/db.js';
import { pgStore } from './pg/index.js';
import type { Db } from './sqlite/db.js';
import { openDb } from './sqlite/db.js';

/**
 * `posthaste db copy --to URL`: the SQLite store the configuration names (server.data_dir) into an
 * empty PostgreSQL database, migrated first (copySqliteToPg below says how). The cut-over around it is
 * in docs/operations.md, "PostgreSQL".
 */
export async function copyToPostgres(
  config: Config,
  url: string,
  password?: string,
): Promise<CopyReport & { to: string }> {
  if (config.store.url !== '')
    throw new Error(`db copy copies a SQLite store, and store.url names ${redactUrl(config.store.url)} already`);
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new Error('--to takes a PostgreSQL URL, "postgresql://user@host:5432/dbname"');
  const opts = { max: 2, applicationName: 'posthaste db copy', ...(password !== undefined ? { password } : {}) };
  const target = pgStore(url, opts);
  try {
    await target.admin.migrate(Date.now());
  } finally {
    await target.admin.close();
  }
  const db = openDb(config.server.data_dir);
  const pg = new PgDb(url, opts);
  try {
    return { ...(await copySqliteToPg(db, pg)), to: redactUrl(url) };
  } finally {
    db.close();
    await pg.close();
  }
}

/**
 * `posthaste db copy --to URL`: a SQLite store into an empty PostgreSQL database, table by table
 * in the order the foreign keys need, in one transaction (all or nothing), then the row counts
 * compared. Read from one SQLite read transaction, so the copy is one moment of the store even if
 * something writes to it meanwhile (the cut-over in docs/operations.md stops the daemon first).
 *
 * Left out: delivery claims (a stopped daemon holds none) and the SQLite engine's bookkeeping.
 * Rows keep their ids; the identity sequences continue after them. The triggers are off while
 * rows arrive (the counters they keep are copied as they are), and the fan-out's cursor becomes
 * the position of the event it stood at.
 */

/** Tables in the order their foreign keys allow. */
const TABLES = [
  'customers',
  'api_keys',
  'domains',
  'messages',
  'recipients',
  'events',
  'suppressions',
  'idempotency_keys',
  'health',
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
  'inbound_messages',
  'inbound_reports',
  'inbound_usage',
  'inbound_limited',
  'users',
  'sessions',
  'activity_hourly',
  'message_tags',
  'destination_throttles',
  'held_destinations',
  'domain_destinations',
  'customer_reputation',
  'dmarc_reports',
  'dmarc_rows',
  'dmarc_unreadable',
  'queue_retries',
  'send_usage',
  'warmup_use',
] as const;

/** Tables with triggers of their own (store/pg/schema.ts). */
const WITH_TRIGGERS = ['api_keys', 'domains', 'recipients', 'events', 'messages', 'customer_reputation'];
/** Columns PostgreSQL has and SQLite does not, with what copied rows get. */
const ONLY_IN_PG: Record<string, Record<string, unknown>> = {
  activity_hourly: { shard: 0 },
  inbound_usage: { shard: 0 },
  send_usage: { shard: 0 },
};
const BATCH = 500;

export interface CopyReport {
  tables: Array<{ table: string; sqlite: number; postgres: number }>;
}

/** Refuses a database that holds anything of posthaste's already (it may have been migrated, empty). */
async function ensureEmpty(q: Q): Promise<void> {
  for (const table of TABLES) {
    const r = await q.row<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
    if (r && r.n > 0)
      throw new Error(
        `the PostgreSQL database is not empty: ${table} has ${r.n} row(s); db copy writes only into an empty database`,
      );
  }
}

/** PostgreSQL's column types of a table, by column, in their order. */
async function pgColumns(q: Q, table: string): Promise<Map<string, string>> {
  const rows = await q.rows<{ column_name: string; udt_name: string }>(
    'SELECT column_name, udt_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position',
    [table],
  );
  return new Map(rows.map((r) => [r.column_name, r.udt_name]));
}

/** A SQLite value as the PostgreSQL column takes it (a BLOB written into a TEXT column, and the other way round). */
function convert(v: unknown, type: string): unknown {
  if (v === null || v === undefined) return null;
  if (type === 'bytea') return Buffer.isBuffer(v) ? v : Buffer.from(String(v), 'utf8');
  if (type === 'text') return Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  return typeof v === 'bigint' ? Number(v) : v;
}

async function copyTable(sqlite: Db, q: Q, table: string): Promise<number> {
  const pgCols = await pgColumns(q, table);
  const liteCols = (sqlite.sqlite.pragma(`table_info(${table})`) as Array<{ name: string }>)
    .map((c) => c.name)
    .filter((c) => pgCols.has(c));
  const extra = ONLY_IN_PG[table] ?? {};
  const cols = [...liteCols, ...Object.keys(extra)];
  const types = cols.map((c) => pgCols.get(c)!);
  const sql = `INSERT INTO ${table} (${cols.join(', ')}) SELECT * FROM unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})`;
  let copied = 0;
  let batch: unknown[][] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    await q.run(
      sql,
      cols.map((_, i) => batch.map((row) => row[i])),
    );
    copied += batch.length;
    batch = [];
  };
  const order = liteCols.includes('id') ? ' ORDER BY id' : liteCols.includes('seq') ? ' ORDER BY seq' : '';
  for (const row of sqlite.sqlite.prepare(`SELECT ${liteCols.join(', ')} FROM ${table}${order}`).iterate() as Iterable<
    Record<string, unknown>
  >) {
    batch.push([...liteCols.map((c, i) => convert(row[c], types[i]!)), ...Object.values(extra)]);
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  return copied;
}

/** Copies everything; resolves with the counts compared, or throws (nothing is left in PostgreSQL then). */
export async function copySqliteToPg(sqlite: Db, pg: PgDb): Promise<CopyReport> {
  // One read transaction on SQLite for the whole copy: one moment of the store.
  sqlite.sqlite.prepare('BEGIN').run();
  try {
    return await pg.tx(async (q) => {
      await ensureEmpty(q);
      for (const t of WITH_TRIGGERS) await q.run(`ALTER TABLE ${t} DISABLE TRIGGER USER`);
      const tables: CopyReport['tables'] = [];
      for (const table of TABLES) {
        const n = await copyTable(sqlite, q, table);
        const inPg = (await q.row<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))!.n;
        const inLite = (sqlite.sqlite.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
        if (inPg !== inLite || n !== inLite)
          throw new Error(`${table}: ${inLite} row(s) in SQLite, ${inPg} in PostgreSQL after the copy`);
        tables.push({ table, sqlite: inLite, postgres: inPg });
      }
      for (const t of WITH_TRIGGERS) await q.run(`ALTER TABLE ${t} ENABLE TRIGGER USER`);
      await copySettings(sqlite, q);
      // Identity columns continue after the copied ids.
      for (const table of TABLES) {
        const key = table === 'events' ? 'seq' : 'id';
        if (!(await pgColumns(q, table)).has(key)) continue;
        const seq = await q.row<{ s: string | null }>('SELECT pg_get_serial_sequence($1, $2) AS s', [table, key]);
        if (seq?.s) await q.run(`SELECT setval($1, greatest((SELECT max(${key}) FROM ${table}), 1))`, [seq.s]);
      }
      return { tables };
    });
  } finally {
    sqlite.sqlite.prepare('COMMIT').run();
  }
}

/** The settings, with the fan-out's cursor as a position: the event it stood at, in the transaction that copied it. */
async function copySettings(sqlite: Db, q: Q): Promise<void> {
  const rows = sqlite.sqlite.prepare('SELECT name, value FROM settings').all() as Array<{
    name: string;
    value: string;
  }>;
  for (const { name, value } of rows) {
    if (name === 'webhook_fanout_seq') {
      const seq = Number(value);
      const at =
        seq > 0
          ? await q.row<{ x: number }>(
              'SELECT txid::text::bigint AS x FROM events WHERE seq <= $1 ORDER BY seq DESC LIMIT 1',
              [seq],
            )
          : undefined;
      await q.run("UPDATE settings SET value = $1 WHERE name = 'webhook_fanout_pos'", [at ? `${at.x}:${seq}` : '0:0']);
      continue;
    }
    await q.run(
      'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
      [name, value],
    );
  }
}
