import { readFileSync } from 'node:fs';
import type { Config } from '../config/schema.js';
import { pgStore } from './pg/index.js';
import { openDb } from './sqlite/db.js';
import { sqliteStore } from './sqlite/index.js';
import { dataDirHeld } from './sqlite/lock.js';
import { GroupCommit } from './sqlite/writer/group-commit.js';
import type { Store } from './store.js';

/**
 * The store the configuration names: `[store] url` empty, the SQLite file in server.data_dir
 * (with the writer thread's group commit for a daemon); a PostgreSQL URL, the PostgreSQL engine,
 * its password from the URL, `store.password_file`, or PGPASSWORD / ~/.pgpass as psql takes them.
 * The only place that picks an engine.
 */
export function openStore(config: Config, opts: { daemon?: boolean; applicationName?: string } = {}): Store {
  const url = config.store.url;
  if (url === '') {
    const db = openDb(config.server.data_dir, config.limits.max_store_bytes);
    // The daemon holds the data directory (main.ts); the CLI asks whether a daemon does.
    return opts.daemon
      ? sqliteStore(db, new GroupCommit(db.path, config.limits.max_store_bytes))
      : sqliteStore(db, undefined, () => dataDirHeld(config.server.data_dir));
  }
  return pgStore(url, {
    max: config.store.pool_size,
    ...(opts.applicationName ? { applicationName: opts.applicationName } : {}),
    ...(config.store.password_file ? { password: readPassword(config.store.password_file) } : {}),
  });
}

export function readPassword(file: string): string {
  try {
    return readFileSync(file, 'utf8').split(/\r?\n/)[0]!;
  } catch (e) {
    throw new Error(`store.password_file: cannot read ${file}: ${(e as Error).message}`);
  }
}

export { type DataDirLock, DataDirLockedError, lockDataDir } from './sqlite/lock.js';
