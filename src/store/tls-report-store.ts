import type { TlsCount } from '../domain/tls-report.js';

/**
 * SMTP TLS reporting's part of the store (docs/delivery.md, "TLS reports (RFC 8460)"): the
 * sessions counted per UTC day, policy and failure (added to, never rewritten), and each
 * domain's report of a day claimed by one sender and recorded once sent, so no restart and no
 * second node sends it again.
 */
export interface TlsReportStore {
  /** Adds the sessions to their day's counters, in one transaction. */
  add(counts: TlsCount[]): Promise<void>;
  /** A day's counters, of one policy domain or of all, in a stable order. */
  counts(day: string, domain?: string): Promise<TlsCount[]>;
  /** The policy domains with counters on a day. */
  domains(day: string): Promise<string[]>;
  /**
   * Takes the sending of a domain's report of a day for `holder`: true when it was not sent and no
   * one else holds it, or another's claim is older than `staleMs` (its node died while sending).
   */
  claim(c: TlsReportClaim): Promise<boolean>;
  /** The report was sent (`results`: what each URI said); a no-op unless `holder` holds the claim. */
  sent(day: string, domain: string, holder: string, now: number, results: string): Promise<void>;
  /** Gives a claim up without sending (every URI failed): a later run tries again. */
  release(day: string, domain: string, holder: string): Promise<void>;
  /** What was sent on a day (or is being sent), per domain. */
  sentOn(day: string): Promise<TlsReportRecord[]>;
}

export interface TlsReportClaim {
  day: string;
  domain: string;
  reportId: string;
  holder: string;
  now: number;
  staleMs: number;
}

export interface TlsReportRecord {
  day: string;
  domain: string;
  report_id: string;
  /** Sent when sent_at is set; otherwise claimed by `holder` at claimed_at. */
  holder: string;
  claimed_at: number;
  sent_at: number | null;
  /** JSON: what each URI said. */
  results: string | null;
}

/** A row of a day's counters (tls_report_counts) as both engines read it: the policy and failure as JSON. */
export interface TlsCountRow {
  day: string;
  policy: string;
  failure: string | null;
  sessions: number;
}

export function tlsCountOf(r: TlsCountRow): TlsCount {
  return {
    day: r.day,
    policy: JSON.parse(r.policy),
    failure: r.failure === null ? null : JSON.parse(r.failure),
    sessions: r.sessions,
  };
}
