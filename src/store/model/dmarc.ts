/**
 * DMARC aggregate reports kept (reports/dmarc-aggregate.ts reads them): each report with the
 * customer whose domain it is about (none: a domain posthaste does not hold, kept apart), its rows
 * per source address, and what could not be read, kept and counted.
 */

export interface DmarcAuthResult {
  domain: string;
  /** DKIM: the selector; SPF: the scope (`mfrom`, `helo`). */
  detail: string | null;
  result: string;
}

export interface DmarcRow {
  sourceIp: string;
  count: number;
  /** What the receiver did: none, quarantine, reject. */
  disposition: string;
  /** policy_evaluated: DKIM and SPF as DMARC judged them, i.e. passing *and* aligned with header_from. */
  dkimAligned: boolean;
  spfAligned: boolean;
  headerFrom: string;
  envelopeFrom: string | null;
  dkim: DmarcAuthResult[];
  spf: DmarcAuthResult[];
}

/** One report as read (reports/dmarc-aggregate.ts), to keep. */
export interface DmarcReportInput {
  org: string;
  email: string | null;
  reportId: string;
  /** The domain the policy was published for (policy_published/domain), lower case. */
  domain: string;
  /** The period reported (ms). */
  begin: number;
  end: number;
  policy: { p: string; sp: string | null; pct: number | null; adkim: string; aspf: string };
  rows: DmarcRow[];
}

/** What one mail brought: its reports, and those of its attachments that could not be read (with the mail's first bytes). */
export interface DmarcMailInput {
  reports: DmarcReportInput[];
  unreadable: Array<{ name: string; error: string }>;
  /** The mail, kept with an unreadable report for a look by hand (at most MAX_UNREADABLE_BYTES of it). */
  raw: Buffer;
  receivedAt: number;
}

/** Most bytes of a mail kept beside a report that could not be read. */
export const MAX_UNREADABLE_BYTES = 256 * 1024;

/** What was kept: reports new, reports received before (the same org and report id), attachments unreadable. */
export interface DmarcKept {
  stored: number;
  duplicate: number;
  unreadable: number;
}

/** What a mail's keeping came to: each of its reports stored (true) or received before (false), and its unreadable attachments. */
export function dmarcKept(stored: boolean[], unreadable: number): DmarcKept {
  const n = stored.filter(Boolean).length;
  return { stored: n, duplicate: stored.length - n, unreadable };
}

/** One source address's mail claiming a domain on one day (UTC, of the report's period start), summed over the reports. */
export interface DmarcDaySource {
  day: string;
  source_ip: string;
  messages: number;
  dkim_aligned: number;
  spf_aligned: number;
  /** Passed DMARC: DKIM or SPF aligned. */
  dmarc_pass: number;
  /** The receivers that reported it (org names), sorted. */
  reporters: string[];
}

export interface DmarcSummaryQuery {
  domain: string;
  /** A customer's own domain only; absent: any (an administrator). */
  customerId?: number;
  since: number;
  until: number;
}

export interface DmarcCounts {
  reports: number;
  /** Reports about domains no customer holds. */
  foreign: number;
  unreadable: number;
}
