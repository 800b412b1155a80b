import { isStoreUnavailable } from '../store/errors.js';
import type { Store } from '../store/store.js';
import type { Ctx } from './context.js';

/** The name of the store's secret that return paths are made with and checked by (outbound/deliver.ts, inbound/listener.ts). */
export const RETURN_PATH_SECRET = 'return_path_secret';
/** The secret one-click unsubscribe tokens are made with (domain/unsubscribe.ts), kept as the return path's is. */
export const UNSUBSCRIBE_SECRET = 'unsubscribe_secret';

/** The store named by the configuration cannot be reached at start: the daemon does not start. */
export class StoreUnreachable extends Error {}

/** Step: the store, migrated, with the default customer. */
export async function prepareStore({ log, clock }: Ctx, store: Store): Promise<void> {
  if (store.engine === 'postgres') log.info({ store: store.location }, 'store: PostgreSQL');
  let applied: number[];
  try {
    applied = await store.admin.migrate(clock.now());
  } catch (e) {
    // Unreachable, refused, a wrong password or database name: the first use names the store (the URL without its password).
    const code = (e as { code?: unknown }).code;
    if (!isStoreUnavailable(e) && !(typeof code === 'string' && /^(28|3D)/.test(code))) throw e;
    throw new StoreUnreachable(
      `cannot use the store at ${store.location} (store.url): ${(e as Error).message}; is the database running, and the URL, user and password right?`,
    );
  }
  for (const warning of await store.admin.checks()) log.warn(warning);
  if (applied.length > 0) log.info({ applied }, 'database migrated');
  await store.customers.ensureDefault(clock.now());
}

/** What a first run still lacks: an API key that is not revoked, a dashboard user (the start message's hints). */
export async function firstSteps(store: Store): Promise<{ needsKey: boolean; needsUser: boolean }> {
  const [keys, users] = await Promise.all([store.keys.list(), store.users.list()]);
  return { needsKey: !keys.some((k) => k.revoked_at === null), needsUser: users.length === 0 };
}
