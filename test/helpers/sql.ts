import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import type { Config } from '../../src/config/schema.js';
import { DB_FILE } from '../../src/store/sqlite/db.js';

/**
 * A test's own connection to the store the daemon under test uses, whichever engine, for what
 * the tests check or arrange behind the store interface's back (a row count, a time moved). The
 * SQL is written once with `?` placeholders and plain SQL both engines read; on PostgreSQL they
 * become `$1`, `$2`, … Integers come back as numbers on both.
 */
export interface TestSql {
  readonly engine: 'sqlite' | 'postgres';
  all<Row = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<Row[]>;
  get<Row = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<Row | undefined>;
  /** The first column of the first row (a count, an id). */
  value<T = number>(sql: string, ...params: unknown[]): Promise<T>;
  run(sql: string, ...params: unknown[]): Promise<number>;
  close(): Promise<void>;
}

const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

export function testSql(config: Config): TestSql {
  if (config.store.url === '') {
    const db = new BetterSqlite3(join(config.server.data_dir, DB_FILE));
    db.pragma('busy_timeout = 5000');
    return {
      engine: 'sqlite',
      all: async (sql, ...p) => db.prepare(sql).all(...p) as never[],
      get: async (sql, ...p) => db.prepare(sql).get(...p) as never,
      value: async (sql, ...p) =>
        db
          .prepare(sql)
          .pluck()
          .get(...p) as never,
      run: async (sql, ...p) => db.prepare(sql).run(...p).changes,
      close: async () => void db.close(),
    };
  }
  const pool = new pg.Pool({ connectionString: config.store.url, max: 2 });
  pool.on('error', () => undefined);
  const rows = async (sql: string, p: unknown[]) =>
    (await pool.query(numbered(sql), p)).rows as Array<Record<string, unknown>>;
  return {
    engine: 'postgres',
    all: async (sql, ...p) => (await rows(sql, p)) as never[],
    get: async (sql, ...p) => (await rows(sql, p))[0] as never,
    value: async (sql, ...p) => {
      const r = (await rows(sql, p))[0];
      const v = r ? Object.values(r)[0] : undefined;
      return (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v) as never;
    },
    run: async (sql, ...p) => (await pool.query(numbered(sql), p)).rowCount ?? 0,
    close: () => pool.end(),
  };
}
