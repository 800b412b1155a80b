import { chmodSync, closeSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { migrations } from './migrations/index.js';

export const DB_FILE = 'posthaste.db';
/**
 * `LIMIT` with a bound row count, for every statement that takes one. A bare `LIMIT ?` is read by
 * SQLite's planner (3.53, as better-sqlite3 12 ships it), which marks the statement to be compiled
 * again each time it is bound: the cached statement is parsed and planned anew on every run.
 * `? + 0` is an expression the planner does not read, so the plan is made once (an empty read of
 * the outbox: 8-9 µs → 3 µs).
 */
export const BOUND_LIMIT = 'LIMIT ? + 0';
/** How long a write waits for another connection's write lock before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * The store: one better-sqlite3 connection used synchronously. Every query is plain SQL on a
 * cached prepared statement, with the row type it returns declared beside it; a whole group of
 * writes can share one synchronous transaction (group commit).
 */
export class Db {
  readonly sqlite: BetterSqlite3.Database;
  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  constructor(
    readonly path: string,
    maxBytes = 0,
    /** Page cache ceiling in KiB (grows only as used). */
    cacheKiB = 65536,
  ) {
    this.sqlite = new BetterSqlite3(path);
    // WAL with synchronous=FULL: a commit is on disk when it returns (NORMAL can lose the last
    // commits on power loss). busy_timeout lets the CLI and the daemon share the file.
    this.sqlite.pragma('journal_mode = WAL');
    this.sqlite.pragma('synchronous = FULL');
    this.sqlite.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    this.sqlite.pragma('foreign_keys = ON');
    // Up to 64 MiB of page cache by default (grows only as used): claims on a queue of a million
    // recipients read scattered pages (measured: 17.7 ms per claim with the 2 MiB default, 12.7
    // with this). The group-commit writer only appends and needs far less (store/sqlite/writer/worker.ts).
    this.sqlite.pragma(`cache_size = -${Math.max(1024, Math.floor(cacheKiB))}`);
    this.setMaxBytes(maxBytes);
  }

  /** limits.max_store_bytes: SQLite refuses to grow the file past it (SQLITE_FULL). 0: no cap. */
  setMaxBytes(bytes: number): void {
    const pageSize = this.sqlite.pragma('page_size', { simple: true }) as number;
    // SQLite's own ceiling when uncapped; a cap never shrinks below what the file already holds.
    const pages = bytes > 0 ? Math.max(Math.ceil(bytes / pageSize), 1) : 4294967294;
    this.sqlite.pragma(`max_page_count = ${pages}`);
  }

  /** Whether a transaction is open on this connection (SQLite may roll one back by itself on SQLITE_FULL or an I/O error). */
  get inTransaction(): boolean {
    return this.sqlite.inTransaction;
  }

  /**
   * An online backup to `file` (SQLite's backup API: consistent while the daemon writes), a new
   * file readable by its owner only, whatever the umask: it holds what the store holds.
   */
  async backup(file: string): Promise<BetterSqlite3.BackupMetadata> {
    closeSync(openSync(file, 'wx', SECRET_FILE_MODE));
    try {
      return await this.sqlite.backup(file);
    } catch (e) {
      rmSync(file, { force: true });
      throw e;
    }
  }

  /** A cached prepared statement, for hot paths written in plain SQL. */
  statement(sql: string): BetterSqlite3.Statement {
    return this.prepare(sql);
  }

  private prepare(sql: string): BetterSqlite3.Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.sqlite.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  /** Rows of a select (or of a write with RETURNING), typed as the caller declares them beside the SQL. */
  all<Row>(sql: string, ...params: unknown[]): Row[] {
    return this.prepare(sql).all(...params) as Row[];
  }

  /** The first row, or undefined. */
  get<Row>(sql: string, ...params: unknown[]): Row | undefined {
    return this.prepare(sql).get(...params) as Row | undefined;
  }

  run(sql: string, ...params: unknown[]): BetterSqlite3.RunResult {
    return this.prepare(sql).run(...params);
  }

  /** Rows of a select one at a time, for reads too large to hold (a whole table copied); not cached. */
  iterate<Row>(sql: string, ...params: unknown[]): IterableIterator<Row> {
    return this.sqlite.prepare(sql).iterate(...params) as IterableIterator<Row>;
  }

  /**
   * Runs fn in a transaction (a savepoint when nested). BEGIN IMMEDIATE takes the write lock up
   * front: a deferred transaction that reads and then writes fails at once with
   * SQLITE_BUSY_SNAPSHOT (busy_timeout does not apply) when another connection wrote meanwhile,
   * which the writer thread, the daemon's own connection and the CLI all do.
   */
  tx<T>(fn: () => T): T {
    return this.sqlite.transaction(fn).immediate();
  }

  /**
   * tx, unless another connection holds the write lock at this moment: then undefined at once,
   * where tx would sleep in SQLite's busy handler (1 ms, then 2, 5, 10...) with the thread's event
   * loop blocked meanwhile. For work that can as well be done a moment later (the webhook
   * dispatcher's claims, while the writer thread commits attempts).
   */
  tryTx<T>(fn: () => T): { value: T } | undefined {
    if (this.sqlite.inTransaction) return { value: this.tx(fn) };
    this.statement('PRAGMA busy_timeout = 0').run();
    try {
      this.statement('BEGIN IMMEDIATE').run();
    } catch (e) {
      if ((e as { code?: unknown }).code === 'SQLITE_BUSY') return undefined;
      throw e;
    } finally {
      this.statement(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`).run();
    }
    try {
      const value = fn();
      this.statement('COMMIT').run();
      return { value };
    } catch (e) {
      if (this.sqlite.inTransaction) this.statement('ROLLBACK').run();
      throw e;
    }
  }

  close(): void {
    this.sqlite.close();
  }
}

/**
 * The store holds DKIM private keys, key hashes, webhook secrets and message bodies: its directory
 * is made 0700 and the file 0600 whatever the umask (the unit's UMask=0027 is not there when the
 * CLI runs from a shell). SQLite gives the -wal and -shm files the mode of the database file. A
 * store an older release left readable by others is narrowed to 0640 at most (the service's group
 * keeps read access).
 */
const SECRET_FILE_MODE = 0o600;

export function openDb(dataDir: string, maxBytes = 0): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, DB_FILE);
  try {
    closeSync(openSync(path, 'wx', SECRET_FILE_MODE));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  for (const f of [path, `${path}-wal`, `${path}-shm`]) narrowMode(f);
  return new Db(path, maxBytes);
}

function narrowMode(file: string): void {
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch {
    return; // not there (yet)
  }
  if ((mode & 0o027) !== 0) chmodSync(file, mode & 0o640);
}

/** The schema versions applied to the store, in order. */
export function schemaVersions(db: Db): number[] {
  return db.statement('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
}

/** Applies the pending migrations, each in its own transaction; returns the versions applied. */
export function migrate(db: Db, now: number): number[] {
  db.sqlite.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const done = new Set(
    (db.sqlite.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map(
      (r) => r.version,
    ),
  );
  const applied: number[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    // PRAGMA foreign_keys is a no-op inside a transaction: it is turned off around it.
    if (m.rebuild) db.sqlite.pragma('foreign_keys = OFF');
    try {
      db.tx(() => {
        db.sqlite.exec(m.sql);
        if (m.rebuild) {
          const broken = db.sqlite.pragma('foreign_key_check') as unknown[];
          if (broken.length > 0)
            throw new Error(
              `migration ${m.version} (${m.name}) would break ${broken.length} foreign key(s); nothing was changed`,
            );
        }
        db.sqlite
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(m.version, m.name, now);
      });
    } finally {
      if (m.rebuild) db.sqlite.pragma('foreign_keys = ON');
    }
    applied.push(m.version);
  }
  return applied;
}
