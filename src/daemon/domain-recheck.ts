import type { Resolver } from 'node:dns/promises';
import { recheckDomains } from '../domain-setup/manage.js';
import { every } from '../lib/clock.js';
import type { Store } from '../store/store.js';
import type { Ctx } from './context.js';

/**
 * Step: the verified domains' records checked again every dns.recheck_interval (0: never), by one
 * node of several on one database (the first whose timer claims the run, as the retention job is
 * claimed). What changed is logged, and events it wrote are sent at once (`onEvents`).
 */
export function scheduleDomainRecheck(
  { config, log, clock }: Ctx,
  store: Store,
  resolver: Resolver,
  onEvents: () => void,
): { stop(): Promise<void> } {
  const interval = config.dns.recheck_interval;
  if (interval <= 0) return { stop: async () => undefined };
  return every(interval, async () => {
    try {
      // A node whose timer fires within the interval of another's run leaves this one to it.
      if (!(await store.admin.claimJob('domain_recheck', Math.floor(interval * 0.9))))
        return log.debug('domain re-check: another node runs this one');
      const s = await recheckDomains(store.domains, resolver, config, () => clock.now());
      if (s.unverified.length || s.returnPathChanged.length) onEvents();
      if (s.unverified.length)
        log.warn({ domains: s.unverified }, 'domain re-check: records gone, domains no longer verified');
      if (s.unanswered.length)
        log.warn({ domains: s.unanswered }, 'domain re-check: the DNS server did not answer; left as they were');
      if (s.returnPathChanged.length)
        log.info({ domains: s.returnPathChanged }, 'domain re-check: return path changed');
      log.debug({ checked: s.checked }, 'domain re-check done');
    } catch (e) {
      log.error({ err: e }, 'domain re-check failed');
    }
  });
}
