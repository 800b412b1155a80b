import type { Config } from './config/schema.js';
import { openDb, migrate } from './store/db.js';
import { ensureDefaultCustomer } from './store/customers.js';
import { GroupCommit } from './store/group-commit.js';
import { AuthCache } from './store/auth-cache.js';
import { buildApi } from './api/server.js';
import { parseListen } from './config/load.js';
import { systemClock, type Clock } from './lib/clock.js';
import type { Logger } from './lib/logger.js';
import type { Lifecycle } from './api/deps.js';

export interface Daemon {
  /** Where the API listens (resolved port when 0 was asked for). */
  apiUrl: string;
  stop(): Promise<void>;
}

/** How long SIGTERM may take before the process gives up waiting (SPEC.md: exit within 30 s). */
export const SHUTDOWN_GRACE_MS = 25_000;

/** The composition root: config → store → migrate → services → listeners. Signals are wired by the caller. */
export async function startDaemon(config: Config, log: Logger, clock: Clock = systemClock): Promise<Daemon> {
  const db = openDb(config.server.data_dir);
  const applied = migrate(db, clock.now());
  if (applied.length > 0) log.info({ applied }, 'database migrated');
  ensureDefaultCustomer(db, clock.now());

  const commit = new GroupCommit(db.path);
  let apiUp = false;
  const lifecycle: Lifecycle = { shuttingDown: false, listenersUp: () => apiUp };
  const app = buildApi({ db, commit, auth: new AuthCache(db), config, clock, log, lifecycle });
  const { host, port } = parseListen(config.api.listen);
  await app.listen({ host, port });
  apiUp = true;
  const addr = app.server.address();
  const boundPort = typeof addr === 'object' && addr ? addr.port : port;
  const scheme = config.api['tls.cert'] ? 'https' : 'http';
  const apiUrl = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;
  log.info({ api: apiUrl, data_dir: config.server.data_dir }, 'posthaste is running');

  return {
    apiUrl,
    async stop() {
      lifecycle.shuttingDown = true;
      await app.close();
      apiUp = false;
      await commit.close();
      log.info({ commits: commit.batches, jobs: commit.jobs }, 'group commit totals');
      db.close();
    },
  };
}
