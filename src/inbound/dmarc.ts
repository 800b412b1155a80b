import { readAggregateReports } from '../reports/dmarc-aggregate.js';
import type { DmarcKept } from '../store/model.js';
import type { ListenerDeps } from './session.js';

/**
 * A mail to the DMARC report address (smtp.dmarc_address): its aggregate reports read
 * (reports/dmarc-aggregate.ts) and kept, each once; what could not be read kept and counted. A
 * mail that carries no report is kept as unreadable too, and still answered 250: the reporter
 * did its part, and telling it otherwise only brings the mail back.
 */
export async function keepDmarcReports(
  deps: Pick<ListenerDeps, 'store' | 'clock' | 'log'>,
  raw: Buffer,
): Promise<DmarcKept> {
  const reads = readAggregateReports(raw);
  const kept = await deps.store.dmarc.keep({
    reports: reads.flatMap((r) => (r.kind === 'report' ? [r.report] : [])),
    unreadable: reads.flatMap((r) => (r.kind === 'unreadable' ? [{ name: r.name, error: r.error }] : [])),
    raw,
    receivedAt: deps.clock.now(),
  });
  deps.log.info(
    {
      dmarc_reports: kept.stored,
      duplicate: kept.duplicate,
      unreadable: kept.unreadable,
      domains: [...new Set(reads.flatMap((r) => (r.kind === 'report' ? [r.report.domain] : [])))],
    },
    'DMARC aggregate report mail read',
  );
  return kept;
}
