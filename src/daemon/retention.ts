import cron from 'node-cron';
import { ConfigError } from '../config/load.js';
import type { Store } from '../store/store.js';
import type { Ctx } from './context.js';

/**
 * A scheduled run belongs to one node: every node's schedule fires, the first to claim it in the
 * store runs it, and no node claims again for this long (nodes' clocks may differ by less).
 */
const RETENTION_GAP_MS = 30_000;

/**
 * Step: retention on its schedule (node-cron), run by one node of several on one database; a bad
 * expression stops the start like any bad config.
 */
export function scheduleRetention({ config, log, clock }: Ctx, store: Store): { stop(): void | Promise<void> } {
  if (!cron.validate(config.retention.schedule))
    throw new ConfigError('retention.schedule', `"${config.retention.schedule}" is not a cron expression`);
  return cron.schedule(config.retention.schedule, async () => {
    try {
      if (!(await store.admin.claimJob('retention', RETENTION_GAP_MS)))
        return log.debug('retention: another node runs this one');
      const purged = await store.admin.purgeOld(clock.now(), config.retention.days);
      if (purged.messages || purged.attempts) log.info(purged, 'retention: purged');
    } catch (e) {
      log.error({ err: e }, 'retention job failed');
    }
  });
}
