import type { Resolver } from 'node:dns/promises';
import type { ClusterNode } from '../cluster/node.js';
import { utcDay } from '../domain/tls-report.js';
import { every } from '../lib/clock.js';
import type { TlsSessionLog } from '../outbound/routing/tls-sessions.js';
import { type DaySummary, sendDayReports, type TlsReportDeps, tlsReportSettings } from '../reports/tls-report-send.js';
import type { Store } from '../store/store.js';
import type { SafeFetch } from '../webhooks/safe-fetch.js';
import type { Ctx } from './context.js';

/** How often the job looks whether the previous day's reports are due (or some must be tried again). */
const TICK_MS = 10 * 60_000;
/** After a run where a report could not be sent, the next try waits this long. */
const RETRY_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The TLS report job on this node. */
export interface TlsReportRuns {
  /** Sends the reports of `day` (YYYY-MM-DD) now: those not sent yet, claimed against the other nodes. */
  run(day: string): Promise<DaySummary>;
  /** What the timer does every 10 minutes: the previous day's reports, once due (tlsrpt.delay) and not done. */
  due(): Promise<void>;
  stop(): Promise<void>;
  /** At stop, once nothing delivers: the sessions counted since the last flush written, the flush timer stopped. */
  closeSessions(): Promise<void>;
}

/**
 * Step: the TLS reports (RFC 8460; docs/delivery.md, "TLS reports (RFC 8460)") of the previous
 * UTC day, sent tlsrpt.delay after each UTC midnight. Every node runs the timer; each report is
 * claimed in the store before it is sent and recorded once sent, so whichever node comes first
 * sends it, once. A report that could not be sent is tried again an hour later, that day.
 */
export function scheduleTlsReports(
  { config, log, clock }: Ctx,
  store: Store,
  resolver: Resolver,
  node: Pick<ClusterNode, 'id'>,
  tlsLog: TlsSessionLog | undefined,
  /** The webhooks' guarded client (its address guard, timeout and CAs: webhooks.*), closed by its owner after `stop`. */
  fetch: SafeFetch,
  onQueued: () => void,
): TlsReportRuns {
  const deps: TlsReportDeps = {
    store,
    resolver,
    fetch,
    settings: tlsReportSettings(config),
    holder: node.id,
    clock,
    log,
    onQueued,
  };
  const run = async (day: string): Promise<DaySummary> => {
    // This node's last sessions in first; the others' are in within a flush (10 s), well inside tlsrpt.delay.
    await tlsLog?.flush();
    const summary = await sendDayReports(deps, day);
    for (const s of summary.sent) log.info({ day, domain: s.domain, results: s.results }, 'TLS report sent');
    for (const f of summary.failed) log.warn({ day, domain: f.domain, results: f.results }, 'TLS report not sent');
    return summary;
  };
  let done = '';
  let nextTry = 0;
  const due = async () => {
    const now = clock.now();
    const day = utcDay(now - DAY_MS);
    if (!config.tlsrpt.enabled || done === day || now < nextTry) return;
    if (now < Date.parse(`${utcDay(now)}T00:00:00Z`) + config.tlsrpt.delay) return;
    try {
      const s = await run(day);
      if (s.failed.length || s.skipped.some((k) => k.why === 'DNS did not answer')) nextTry = now + RETRY_MS;
      else done = day;
    } catch (e) {
      nextTry = now + RETRY_MS;
      log.error({ err: e, day }, 'TLS reports: the run failed');
    }
  };
  const timer = every(TICK_MS, due);
  return {
    run,
    due,
    stop: () => timer.stop(),
    closeSessions: async () => tlsLog?.stop(),
  };
}
