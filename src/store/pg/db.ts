import { createHash } from 'node:crypto';
import pg from 'pg';
import { StoreUnavailable } from '../errors.js';

// int8 (bigint) columns hold times in milliseconds and row ids, well inside 2^53: numbers, as
// better-sqlite3 gives them (pg gives strings by default). Set once, for the driver's default types.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/** What a query runs on: the pool (one statement, its own transaction) or a transaction's client. */
export interface Q {
  rows<Row>(sql: string, values?: unknown[]): Promise<Row[]>;
  row<Row>(sql: string, values?: unknown[]): Promise<Row | undefined>;
  /** Rows changed. */
  run(sql: string, values?: unknown[]): Promise<number>;
}

/**
 * PostgreSQL codes and driver errors that mean the database cannot be reached or cannot write
 * now: connection exceptions (08), insufficient resources (53: disk full, too many connections),
 * operator intervention (57: shutting down, starting up, a connection terminated), system errors
 * (58: I/O), the sockets' own errors (also inside an AggregateError, as Node reports a connect
 * tried on several addresses), and the driver's messages for a connection lost or never made.
 * A server-side condition: never to be taken for the client's fault (api/errors.ts).
 */
export function unavailable(e: unknown): StoreUnavailable | undefined {
  if (e instanceof StoreUnavailable) return e;
  const err = e as { code?: unknown; message?: string; errors?: unknown };
  const code = typeof err?.code === 'string' ? err.code : '';
  const message = err?.message ?? String(e);
  if (/^(08|53|57|58)[0-9A-Z]{3}$/.test(code))
    return new StoreUnavailable(`PostgreSQL: ${message}`, code, code === '53100');
  if (SOCKET_ERRORS.has(code)) return new StoreUnavailable(`PostgreSQL unreachable: ${message}`, code);
  if (LOST.test(message)) return new StoreUnavailable(`PostgreSQL unreachable: ${message}`, 'connection');
  if (Array.isArray(err?.errors)) {
    const inner = err.errors.map(unavailable).find((u) => u !== undefined);
    if (inner) return new StoreUnavailable(inner.message, inner.code);
  }
  return undefined;
}

const SOCKET_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT', // a Unix socket not there (the server stopped)
]);

/** The driver's own words (pg, pg-pool) for a connection that was lost, never made, or is unusable. */
const LOST =
  /Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Connection ended unexpectedly|Client was closed|Query read timeout|terminating connection|the database system is (starting up|shutting down|in recovery mode|not yet accepting connections)|server closed the connection unexpectedly/i;

/** Serialization failures and deadlocks: the transaction may simply be run again. */
const RETRY = new Set(['40001', '40P01']);

/** A statement's name, from its text: each connection prepares it once and reuses the plan. */
const names = new Map<string, string>();
function named(sql: string): string {
  let n = names.get(sql);
  if (!n) names.set(sql, (n = `p${createHash('sha1').update(sql).digest('base64url').slice(0, 16)}`));
  return n;
}

class On implements Q {
  constructor(private readonly c: pg.Pool | pg.PoolClient) {}
  async rows<Row>(sql: string, values: unknown[] = []): Promise<Row[]> {
    try {
      return (await this.c.query({ name: named(sql), text: sql, values })).rows as Row[];
    } catch (e) {
      throw unavailable(e) ?? e;
    }
  }
  async row<Row>(sql: string, values: unknown[] = []): Promise<Row | undefined> {
    return (await this.rows<Row>(sql, values))[0];
  }
  async run(sql: string, values: unknown[] = []): Promise<number> {
    try {
      return (await this.c.query({ name: named(sql), text: sql, values })).rowCount ?? 0;
    } catch (e) {
      throw unavailable(e) ?? e;
    }
  }
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/**
 * `url` with `password` in it (store.password_file), replacing any it has. pg takes the fields of
 * a connection string over its other options, and a URL without a password gives an empty one
 * that would hide the file's; so the password goes into the URL, percent-encoded as
 * pg-connection-string decodes it. A URL without a user keeps none (pg's default user applies).
 */
export function withPassword(url: string, password: string): string {
  return url.replace(
    /^(postgres(?:ql)?:\/\/)(?:([^:@/?#]*)(?::[^@/?#]*)?@)?/,
    (_m, scheme: string, user: string | undefined) => `${scheme}${user ?? ''}:${encodeURIComponent(password)}@`,
  );
}

/**
 * How every connection of a node connects (the pool's, the LISTEN one, migrations and the
 * admin commands on the pool): one connection string, the password of store.password_file in it
 * (withPassword), never a `password` option beside it, which pg lets the string's own (empty)
 * password hide.
 */
export function connectionConfig(url: string, opts: { password?: string; applicationName?: string } = {}) {
  return {
    connectionString: opts.password !== undefined ? withPassword(url, opts.password) : url,
    application_name: opts.applicationName ?? 'posthaste',
  } satisfies pg.ClientConfig;
}

/**
 * The counters' shard of a pooled connection (migration 020: posthaste_shard()): a slot of 64
 * free across the cluster, held by a session advisory lock for as long as the connection lives
 * (classid 1885893480, "phsh"), so no two live connections of any nodes share one and their
 * counter rows never make them wait for each other's commits. None free: '' (the pid modulo 64).
 */
const SHARD_SLOT = `SELECT set_config('posthaste.shard', coalesce((SELECT s FROM generate_series(0, 63) AS s
  WHERE pg_try_advisory_lock(1885893480, s) LIMIT 1)::text, ''), false)`;

/**
 * The pool every part of a node shares: statements on cached plans, transactions with a
 * retry on serialization failures and deadlocks, and every error that means "the database is
 * not there" turned into StoreUnavailable.
 */
export class PgDb implements Q {
  readonly pool: pg.Pool;
  /** The pool's size: connections this node opens at most. */
  readonly max: number;
  /** How to open a connection of one's own, outside the pool (LISTEN: store/pg/listener.ts): as the pool's. */
  readonly client: pg.ClientConfig;
  private readonly on: On;

  constructor(
    readonly url: string,
    opts: { password?: string; max?: number; applicationName?: string } = {},
  ) {
    this.max = opts.max ?? 10;
    this.client = connectionConfig(url, opts);
    this.pool = new pg.Pool({
      ...this.client,
      max: this.max,
      // Never wait forever for a connection (the default): a database gone away is an error now.
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      // Before the pool hands a new client out: its counters' shard (a failure leaves it the pid's).
      onConnect: async (client) => {
        await client.query(SHARD_SLOT).catch(() => undefined);
      },
    });
    // A client whose server went away emits 'error': the pool listens on idle ones, and this on
    // every client from its start, so one checked out (in a transaction) cannot crash the process;
    // its query fails instead, and the broken client is not given back to the pool.
    this.pool.on('error', () => undefined);
    this.pool.on('connect', (client) => client.on('error', () => undefined));
    this.on = new On(this.pool);
  }

  rows<Row>(sql: string, values?: unknown[]): Promise<Row[]> {
    return this.on.rows<Row>(sql, values);
  }
  row<Row>(sql: string, values?: unknown[]): Promise<Row | undefined> {
    return this.on.row<Row>(sql, values);
  }
  run(sql: string, values?: unknown[]): Promise<number> {
    return this.on.run(sql, values);
  }

  /**
   * Runs fn in one transaction (READ COMMITTED) on one connection; COMMIT has returned when this
   * resolves. Run again, up to three times, when PostgreSQL aborts it as a serialization failure
   * or deadlock, or when `retryOn` says so (a unique violation a concurrent twin caused).
   */
  async tx<T>(fn: (q: Q) => Promise<T>, retryOn?: (e: unknown) => boolean): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (e) {
        throw unavailable(e) ?? e;
      }
      let broken = false;
      try {
        await client.query('BEGIN');
        const value = await fn(new On(client));
        await client.query('COMMIT');
        return value;
      } catch (e) {
        try {
          await client.query('ROLLBACK');
        } catch {
          broken = true;
        }
        const code = (e as { code?: unknown }).code;
        if (attempt < 3 && ((typeof code === 'string' && RETRY.has(code)) || retryOn?.(e))) continue;
        throw unavailable(e) ?? e;
      } finally {
        client.release(broken);
      }
    }
  }

  /** Runs fn on one connection of its own, outside any transaction (migrations, advisory locks). */
  async withClient<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw unavailable(e) ?? e;
    }
    try {
      return await fn(client);
    } catch (e) {
      throw unavailable(e) ?? e;
    } finally {
      client.release();
    }
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/** Whether e is a unique violation of the named constraint (or index). */
export function uniqueViolation(e: unknown, constraint: string): boolean {
  const err = e as { code?: unknown; constraint?: unknown };
  return err?.code === '23505' && err.constraint === constraint;
}
