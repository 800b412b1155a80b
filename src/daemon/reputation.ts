import { ConfigError } from '../config/load.js';
import { reputationSettings } from '../config/settings.js';
import type { ReputationSettings } from '../domain/reputation.js';
import { ReputationGuard } from '../send/reputation.js';
import type { Store } from '../store/store.js';
import type { Ctx } from './context.js';

/** The `[reputation]` settings, a warning threshold above its pause threshold stopping the start like any bad key. */
export function startReputationSettings(ctx: Pick<Ctx, 'config'>): ReputationSettings {
  try {
    return reputationSettings(ctx.config);
  } catch (e) {
    throw new ConfigError('reputation', (e as Error).message);
  }
}

/**
 * Step: the reputation check (send/reputation.ts) every `reputation.check_interval`, run by one
 * node of several on one database (the store's job claim, as retention's); a change's event is
 * written in the change's transaction, and the webhook loop is told.
 */
export function startReputationCheck(
  { config, log, clock }: Ctx,
  store: Store,
  settings: ReputationSettings,
  onEvents: () => void,
): { stop(): void } {
  const every = config.reputation.check_interval;
  if (every === 0) return { stop: () => undefined };
  const guard = new ReputationGuard(store, () => settings);
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      if (!(await store.admin.claimJob('reputation', Math.floor(every * 0.8)))) return;
      const changes = await guard.check(clock.now());
      for (const c of changes)
        log.warn({ customer_id: c.customerId, state: c.to }, 'reputation: customer state changed');
      if (changes.some((c) => c.to !== 'ok')) onEvents();
    } catch (e) {
      log.error({ err: e }, 'reputation check failed');
    } finally {
      running = false;
    }
  }, every);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
