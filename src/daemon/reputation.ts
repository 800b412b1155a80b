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
 * node of several on one database (the store's job claim, as retention's), and soon (50 ms) after
 * this node records outcomes (`kick`), so a customer whose mail starts bouncing is judged while
 * its mail is being delivered, not seconds later. Whichever node judges, a change and its event
 * are written once (the change's transaction checks the state it was judged from); the webhook
 * loop is told.
 */
export function startReputationCheck(
  { config, log, clock }: Ctx,
  store: Store,
  settings: ReputationSettings,
  onEvents: () => void,
): { stop(): void; kick(): void } {
  const every = config.reputation.check_interval;
  if (every === 0) return { stop: () => undefined, kick: () => undefined };
  const guard = new ReputationGuard(store, () => settings);
  let running = false;
  let kicked: NodeJS.Timeout | undefined;
  const run = async (scheduled: boolean) => {
    if (running) return;
    running = true;
    try {
      if (scheduled && !(await store.admin.claimJob('reputation', Math.floor(every * 0.8)))) return;
      const changes = await guard.check(clock.now());
      for (const c of changes)
        log.warn({ customer_id: c.customerId, state: c.to }, 'reputation: customer state changed');
      if (changes.some((c) => c.to !== 'ok')) onEvents();
    } catch (e) {
      log.error({ err: e }, 'reputation check failed');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void run(true), every);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      clearTimeout(kicked);
    },
    kick: () => {
      kicked ??= setTimeout(() => {
        kicked = undefined;
        void run(false);
      }, 50).unref();
    },
  };
}
