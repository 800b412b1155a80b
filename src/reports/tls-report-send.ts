import type { Resolver } from 'node:dns/promises';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Config } from '../config/schema.js';
import {
  buildReport,
  parseTlsRptRecord,
  type ReportHeader,
  reportFileName,
  reportId,
  type TlsReport,
} from '../domain/tls-report.js';
import type { Clock } from '../lib/clock.js';
import { BASE32, timeSortableId } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { Store } from '../store/store.js';
import type { SafeFetch } from '../webhooks/safe-fetch.js';
import { reportMessage, reportSubject } from './tls-report-mail.js';

// A day's TLS reports (RFC 8460) built from the store's counters and sent to each domain's rua
// URIs: mailto as a mail through the queue, https as a POST through the webhooks' guarded client;
// each domain's report claimed in the store first and recorded once sent, so it goes once
// (docs/delivery.md, "TLS reports (RFC 8460)").

const gzipped = promisify(gzip);

/** A claim older than this is taken over: the node holding it died while sending. */
const STALE_CLAIM_MS = 3_600_000;

/** What the reports say of their sender, and where mail reports come from. */
export interface TlsReportSettings {
  organization: string;
  contact: string;
  /** server.hostname: the report's submitter. */
  submitter: string;
  /** tlsrpt.from: empty, no mail reports. */
  from: string;
}

export const tlsReportSettings = (config: Config): TlsReportSettings => ({
  organization: config.tlsrpt.organization_name || config.server.hostname,
  contact: config.tlsrpt.contact_info || `postmaster@${config.server.hostname}`,
  submitter: config.server.hostname,
  from: config.tlsrpt.from,
});

export interface TlsReportDeps {
  store: Pick<Store, 'tlsReports' | 'domains' | 'messages'>;
  resolver: Pick<Resolver, 'resolveTxt'>;
  fetch: Pick<SafeFetch, 'post'>;
  settings: TlsReportSettings;
  /** Who claims the reports it sends (the node's id). */
  holder: string;
  clock: Clock;
  log: Logger;
  /** A mail report was queued: the delivery loop may look at once. */
  onQueued?: () => void;
}

/** A domain's report of a day, as it is or would be sent. */
export interface DayReport {
  domain: string;
  report: TlsReport;
  fileName: string;
}

/** The report of one domain's day from the store's counters. */
export async function dayReport(
  store: Pick<Store, 'tlsReports'>,
  settings: TlsReportSettings,
  day: string,
  domain: string,
): Promise<DayReport> {
  const header: ReportHeader = { ...settings, day, domain };
  return {
    domain,
    report: buildReport(header, await store.tlsReports.counts(day, domain)),
    fileName: reportFileName(header),
  };
}

/** A domain's rua URIs from `_smtp._tls.<domain>`; null when it publishes none; 'unanswered' when DNS did not say. */
export async function ruaOf(
  resolver: Pick<Resolver, 'resolveTxt'>,
  domain: string,
): Promise<string[] | null | 'unanswered'> {
  let records: string[][];
  try {
    records = await resolver.resolveTxt(`_smtp._tls.${domain}`);
  } catch (e) {
    const code = (e as { code?: string }).code;
    return code === 'ENOTFOUND' || code === 'ENODATA' ? null : 'unanswered';
  }
  const found = records.map((r) => parseTlsRptRecord(r.join(''))).filter((u): u is string[] => u !== null);
  // RFC 8460 3: more than one record is no record.
  return found.length === 1 ? found[0]! : null;
}

export interface UriResult {
  uri: string;
  ok: boolean;
  detail: string;
}

/** What a day's run did, domain by domain. */
export interface DaySummary {
  sent: Array<{ domain: string; results: UriResult[] }>;
  /** Sent before, held by another node, without a TLS-RPT record, or DNS did not answer (tried again next run). */
  skipped: Array<{ domain: string; why: string }>;
  failed: Array<{ domain: string; results: UriResult[] }>;
}

/** Sends every domain's report of `day` that is due: its record found, claimed here, then recorded sent. */
export async function sendDayReports(deps: TlsReportDeps, day: string): Promise<DaySummary> {
  const summary: DaySummary = { sent: [], skipped: [], failed: [] };
  for (const domain of await deps.store.tlsReports.domains(day)) {
    const rua = await ruaOf(deps.resolver, domain);
    if (rua === null || rua === 'unanswered') {
      summary.skipped.push({ domain, why: rua === null ? 'no TLS-RPT record' : 'DNS did not answer' });
      continue;
    }
    const id = reportId({ day, domain, submitter: deps.settings.submitter });
    const claim = { day, domain, reportId: id, holder: deps.holder, now: deps.clock.now(), staleMs: STALE_CLAIM_MS };
    if (!(await deps.store.tlsReports.claim(claim))) {
      summary.skipped.push({ domain, why: 'sent already, or being sent by another node' });
      continue;
    }
    const results = await sendReport(deps, await dayReport(deps.store, deps.settings, day, domain), rua);
    if (results.some((r) => r.ok)) {
      await deps.store.tlsReports.sent(day, domain, deps.holder, deps.clock.now(), JSON.stringify(results));
      summary.sent.push({ domain, results });
    } else {
      await deps.store.tlsReports.release(day, domain, deps.holder);
      summary.failed.push({ domain, results });
    }
  }
  return summary;
}

/** The report, gzipped, to each URI; what each said. */
async function sendReport(deps: TlsReportDeps, r: DayReport, rua: string[]): Promise<UriResult[]> {
  const body = await gzipped(Buffer.from(JSON.stringify(r.report)));
  const results: UriResult[] = [];
  for (const uri of rua) {
    try {
      results.push(
        uri.toLowerCase().startsWith('mailto:') ? await mail(deps, r, uri, body) : await post(deps, uri, body),
      );
    } catch (e) {
      results.push({ uri, ok: false, detail: (e as Error).message });
    }
  }
  return results;
}

/** RFC 8460 5.3: POST the gzipped report as application/tlsrpt+gzip; any 2xx is received. */
async function post(deps: TlsReportDeps, uri: string, body: Buffer): Promise<UriResult> {
  const headers = ['content-type', 'application/tlsrpt+gzip', 'user-agent', `posthaste (${deps.settings.submitter})`];
  const res = await deps.fetch.post(uri, headers, body);
  const ok = res.status !== null && res.status >= 200 && res.status < 300;
  return { uri, ok, detail: res.error ?? `HTTP ${res.status}` };
}

/** The report mailed: a message of tlsrpt.from's domain's customer, queued as that customer's mail is, signed with its key. */
async function mail(deps: TlsReportDeps, r: DayReport, uri: string, body: Buffer): Promise<UriResult> {
  const { settings, clock } = deps;
  const to = decodeURIComponent(uri.slice('mailto:'.length).split('?')[0]!);
  if (!settings.from) return { uri, ok: false, detail: 'tlsrpt.from is not set: no reports by mail' };
  const fromDomain = settings.from.slice(settings.from.lastIndexOf('@') + 1).toLowerCase();
  const sending = await deps.store.domains.findSending(fromDomain);
  if (!sending?.verified_at)
    return { uri, ok: false, detail: `tlsrpt.from's domain ${fromDomain} is not a verified sending domain` };
  const now = clock.now();
  const messageId = `${timeSortableId(now, BASE32)}@${fromDomain}`;
  const raw = reportMessage({
    from: settings.from,
    to,
    domain: r.domain,
    submitter: settings.submitter,
    reportId: r.report['report-id'],
    fileName: r.fileName,
    gzipped: body,
    messageId,
    date: new Date(now),
  });
  const committed = await deps.store.messages.accept({
    customerId: sending.customer_id,
    apiKeyId: null,
    sandbox: false,
    messageId,
    fromHeader: settings.from,
    senderDomain: fromDomain,
    subject: reportSubject({ domain: r.domain, submitter: settings.submitter, reportId: r.report['report-id'] }),
    metadata: {},
    request: raw,
    requestFormat: 'mime',
    recipients: [{ address: to, domain: to.slice(to.lastIndexOf('@') + 1).toLowerCase(), field: 'to' }],
    tags: ['tlsrpt'],
    now,
    authEpoch: '',
  });
  if (committed.kind !== 'accepted') return { uri, ok: false, detail: `not queued: ${committed.kind}` };
  deps.onQueued?.();
  return { uri, ok: true, detail: `queued as ${messageId}` };
}
