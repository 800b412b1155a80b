import type { Config } from '../config/schema.js';
import { openDb } from './db.js';
import { PgDb, redactUrl } from './pg/db.js';
import { pgStore } from './pg/index.js';
import { copySqliteToPg, type CopyReport } from './pg/copy.js';

export type { CopyReport };

/**
 * `posthaste db copy --to URL`: the SQLite store the configuration names (server.data_dir) into an
 * empty PostgreSQL database, migrated first (store/pg/copy.ts says how). The cut-over around it is
 * in docs/operations.md, "PostgreSQL".
 */
export async function copyToPostgres(config: Config, url: string, password?: string): Promise<CopyReport & { to: string }> {
  if (config.store.url !== '') throw new Error(`db copy copies a SQLite store, and store.url names ${redactUrl(config.store.url)} already`);
  if (!/^postgres(ql)?:\/\//.test(url)) throw new Error('--to takes a PostgreSQL URL, "postgresql://user@host:5432/dbname"');
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
