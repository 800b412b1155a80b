import type { AdminStore } from '../store.js';
import type { Db } from './db.js';
import { migrate, schemaVersions } from './db.js';
import { overview } from './overview.js';
import { purgeOld } from './retention.js';
import { secret } from './settings.js';
import { countsByState, oldestQueuedAt, status, touchHealth } from './status.js';
import type { GroupCommit } from './writer/group-commit.js';

/**
 * The store's administration on SQLite: schema, settings, health, status and retention. `held`:
 * whether a daemon holds the data directory now (store/sqlite/index.ts).
 */
export function sqliteAdmin(db: Db, writer: GroupCommit | undefined, held: () => boolean): AdminStore {
  return {
    migrate: async (now) => migrate(db, now),
    schemaVersions: async () => schemaVersions(db),
    secret: async (name, bytes) => secret(db, name, bytes),
    touchHealth: async (now) => touchHealth(db, now),
    status: async (now) => status(db, now, held()),
    countsByState: async (table) => countsByState(db, table),
    oldestQueuedAt: async (now) => oldestQueuedAt(db, now),
    overview: async (customerId, now) => overview(db, customerId, now),
    purgeOld: async (now, days) => purgeOld(db, now, days),
    // One process holds the file (store/open.ts): its schedule is the only one.
    claimJob: async () => true,
    backup: async (file) => void (await db.backup(file)),
    // synchronous = FULL is set by the engine itself (sqlite/db.ts): nothing to warn of.
    checks: async () => [],
    setMaxBytes: (bytes) => {
      db.setMaxBytes(bytes);
      writer?.setMaxBytes(bytes);
    },
    close: async () => {
      await writer?.close();
      db.close();
    },
  };
}
