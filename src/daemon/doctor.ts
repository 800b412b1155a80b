import type { DoctorReport } from '../domain/doctor.js';
import { runDoctor } from '../domain-setup/doctor.js';
import { createResolver } from '../lib/dns.js';
import type { Store } from '../store/store.js';
import type { Ctx } from './context.js';

/** How long after start the first run waits at most (the start is not made slower by it); then every doctor.interval. */
export const DOCTOR_FIRST_RUN_MS = 10_000;

/** The doctor's periodic run on this node, and its last report (kept in memory: each node its own, gone at restart). */
export interface DoctorRuns {
  /** The last report; null before the first run ends. */
  last(): DoctorReport | null;
  /** Runs it now (or joins the run under way); null when it failed (logged). */
  run(): Promise<DoctorReport | null>;
  stop(): void;
}

/**
 * Step: the deliverability doctor (domain-setup/doctor.ts) every doctor.interval (an hour unless
 * configured; never by itself at 0), its last report kept for the
 * dashboard and /metrics. It never stops the daemon nor slows delivery: a resolver of its own (its
 * queries do not wait behind delivery's, nor delivery's behind its), one run at a time, a few
 * domains at once, timers that do not hold the process, and any failure logged and forgotten.
 */
export function scheduleDoctor({ config, log, clock }: Ctx, store: Store): DoctorRuns {
  const resolver = createResolver(config.dns.servers);
  let last: DoctorReport | null = null;
  let running: Promise<DoctorReport | null> | null = null;
  let stopped = false;
  const once = async (): Promise<DoctorReport | null> => {
    try {
      const domains = await store.domains.list();
      const report = await runDoctor({ config, resolver, domains, node: true, now: clock.now() });
      if (stopped) return null;
      last = report;
      const failing = report.checks.filter((c) => c.state === 'fail');
      if (failing.length)
        log.warn(
          { failing: failing.map((c) => `${c.check} ${c.subject}`) },
          'doctor: checks failing (run "posthaste doctor" for the fix of each)',
        );
      return report;
    } catch (e) {
      if (!stopped) log.error({ err: e }, 'doctor: the run failed');
      return null;
    }
  };
  const run = () => {
    running ??= once().finally(() => {
      running = null;
    });
    return running;
  };
  const interval = config.doctor.interval;
  const first = interval > 0 ? setTimeout(run, Math.min(DOCTOR_FIRST_RUN_MS, interval)) : undefined;
  const every = interval > 0 ? setInterval(run, interval) : undefined;
  first?.unref();
  every?.unref();
  return {
    last: () => last,
    run,
    stop: () => {
      stopped = true;
      clearTimeout(first);
      clearInterval(every);
    },
  };
}
