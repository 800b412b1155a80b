import { createHash } from 'node:crypto';

/**
 * SMTP TLS reporting (RFC 8460): what one connection's TLS came to, as counted per UTC day, and
 * the JSON report a domain is sent for a day; pure (docs/delivery.md, "TLS reports (RFC 8460)").
 */

export type TlsPolicyType = 'sts' | 'tlsa' | 'no-policy-found';

/** RFC 8460 4.3's result types. */
export const TLS_RESULT_TYPES = [
  'starttls-not-supported',
  'certificate-host-mismatch',
  'certificate-expired',
  'certificate-not-trusted',
  'validation-failure',
  'tlsa-invalid',
  'dnssec-invalid',
  'dane-required',
  'sts-policy-fetch-error',
  'sts-policy-invalid',
  'sts-webpki-invalid',
] as const;
export type TlsResultType = (typeof TLS_RESULT_TYPES)[number];

/** The policy a session was made under, as the report names it. */
export interface TlsPolicyRef {
  type: TlsPolicyType;
  /** The policy's text, a line an element: the MTA-STS policy's fields, or the TLSA records. */
  strings: string[];
  domain: string;
  /** The MX hosts it applies to: an MTA-STS policy's mx patterns, the MX host of TLSA records. */
  mx: string[];
}

/** Why a session's TLS failed, and where. */
export interface TlsFailure {
  resultType: TlsResultType;
  /** The source address of the connection ('' when none was made: a policy that could not be had). */
  sendingIp: string;
  receivingMx: string;
  receivingIp: string;
  /** The failure in words (failure-reason-code), at most REASON_LENGTH characters. */
  reason: string;
}

/** One session (a connection attempt that reached TLS, or should have): its policy, and its failure or null. */
export interface TlsSession {
  policy: TlsPolicyRef;
  failure: TlsFailure | null;
}

/** Sessions of one kind in one UTC day, as counted. */
export interface TlsCount extends TlsSession {
  /** YYYY-MM-DD, UTC. */
  day: string;
  sessions: number;
}

export const REASON_LENGTH = 200;

/** The UTC day (YYYY-MM-DD) of a time. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** A day (YYYY-MM-DD) is well formed and a real date. */
export function isDay(day: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(day) && utcDay(Date.parse(`${day}T00:00:00Z`)) === day;
}

/** What identifies a counter: its day, policy and failure, hashed (the store's key). */
export function countKey(day: string, s: TlsSession): string {
  return createHash('sha256')
    .update(JSON.stringify([day, s.policy, s.failure]))
    .digest('hex');
}

/**
 * The result type of a TLS failure, from the client's words: a STARTTLS missing or refused; the
 * certificate's dates, names or chain (Node's OpenSSL messages); anything else, DANE's "matches
 * none of the TLSA records" among them, is a validation failure.
 */
export function resultTypeOf(message: string): TlsResultType {
  if (/does not offer STARTTLS|refused STARTTLS/i.test(message)) return 'starttls-not-supported';
  if (/certificate has expired|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|outside its dates|not yet valid/i.test(message))
    return 'certificate-expired';
  if (/does not match certificate|altname|not valid for/i.test(message)) return 'certificate-host-mismatch';
  if (/self[-_ ]signed|unable[_ ]to[_ ](verify|get)|not trusted|untrusted|unknown ca|CERT_UNTRUSTED/i.test(message))
    return 'certificate-not-trusted';
  return 'validation-failure';
}

/** A failure's words as kept: one line, at most REASON_LENGTH characters. */
export const reasonOf = (message: string): string => message.replace(/\s+/g, ' ').trim().slice(0, REASON_LENGTH);

/** The policy-string of an MTA-STS policy (RFC 8461 3.2's fields, in its order). */
export function stsPolicyStrings(p: { mode: string; mx: string[]; maxAge: number }): string[] {
  return ['version: STSv1', `mode: ${p.mode}`, ...p.mx.map((m) => `mx: ${m}`), `max_age: ${p.maxAge}`];
}

export interface TlsReportFailureDetail {
  'result-type': TlsResultType;
  'sending-mta-ip'?: string;
  'receiving-mx-hostname'?: string;
  'receiving-ip'?: string;
  'failed-session-count': number;
  'failure-reason-code'?: string;
}

/** RFC 8460 4.4's report. */
export interface TlsReport {
  'organization-name': string;
  'date-range': { 'start-datetime': string; 'end-datetime': string };
  'contact-info': string;
  'report-id': string;
  policies: Array<{
    policy: {
      'policy-type': TlsPolicyType;
      'policy-string'?: string[];
      'policy-domain': string;
      'mx-host'?: string[];
    };
    summary: { 'total-successful-session-count': number; 'total-failure-session-count': number };
    'failure-details'?: TlsReportFailureDetail[];
  }>;
}

export interface ReportHeader {
  organization: string;
  contact: string;
  /** The submitter's domain (server.hostname). */
  submitter: string;
  day: string;
  domain: string;
}

/** The report's id (RFC 8460 5.3's form): the day and the policy domain at the submitter, so a resend keeps it. */
export const reportId = (h: Pick<ReportHeader, 'day' | 'domain' | 'submitter'>): string =>
  `${h.day.replace(/-/g, '.')}T00.00.00Z+${h.domain}@${h.submitter}`;

/** The day's span: its first and last second, as RFC 3339 datetimes and as Unix times. */
export function daySpan(day: string): { start: string; end: string; begin: number; finish: number } {
  const begin = Date.parse(`${day}T00:00:00Z`) / 1000;
  return { start: `${day}T00:00:00Z`, end: `${day}T23:59:59Z`, begin, finish: begin + 86_399 };
}

/** The report of one domain's day from its counters (those of other days and domains are left out). */
export function buildReport(h: ReportHeader, counts: TlsCount[]): TlsReport {
  const span = daySpan(h.day);
  const policies = new Map<string, TlsReport['policies'][number]>();
  for (const c of counts) {
    if (c.day !== h.day || c.policy.domain !== h.domain) continue;
    const key = JSON.stringify(c.policy);
    let entry = policies.get(key);
    if (!entry) {
      entry = {
        policy: {
          'policy-type': c.policy.type,
          ...(c.policy.strings.length ? { 'policy-string': c.policy.strings } : {}),
          'policy-domain': c.policy.domain,
          ...(c.policy.mx.length ? { 'mx-host': c.policy.mx } : {}),
        },
        summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 0 },
      };
      policies.set(key, entry);
    }
    if (!c.failure) {
      entry.summary['total-successful-session-count'] += c.sessions;
      continue;
    }
    entry.summary['total-failure-session-count'] += c.sessions;
    (entry['failure-details'] ??= []).push(failureDetail(c.failure, c.sessions));
  }
  return {
    'organization-name': h.organization,
    'date-range': { 'start-datetime': span.start, 'end-datetime': span.end },
    'contact-info': h.contact,
    'report-id': reportId(h),
    policies: [...policies.values()],
  };
}

function failureDetail(f: TlsFailure, sessions: number): TlsReportFailureDetail {
  return {
    'result-type': f.resultType,
    ...(f.sendingIp ? { 'sending-mta-ip': f.sendingIp } : {}),
    ...(f.receivingMx ? { 'receiving-mx-hostname': f.receivingMx } : {}),
    ...(f.receivingIp ? { 'receiving-ip': f.receivingIp } : {}),
    'failed-session-count': sessions,
    ...(f.reason ? { 'failure-reason-code': f.reason } : {}),
  };
}

/** RFC 8460 5.1's file name: `<submitter>!<policy domain>!<begin>!<end>!<unique id>.json.gz`. */
export function reportFileName(h: Pick<ReportHeader, 'submitter' | 'domain' | 'day'>): string {
  const span = daySpan(h.day);
  return `${h.submitter}!${h.domain}!${span.begin}!${span.finish}!${h.day.replace(/-/g, '')}.json.gz`;
}

/** A domain's TLS-RPT record (RFC 8460 3): its rua URIs, or null when the text is not one. */
export function parseTlsRptRecord(text: string): string[] | null {
  if (!/^v=TLSRPTv1\s*;/.test(text)) return null;
  const rua = /(?:^|;)\s*rua=([^;]*)/.exec(text);
  if (!rua) return null;
  const uris = rua[1]!
    .split(',')
    .map((u) => u.trim())
    .filter((u) => /^(mailto:[^\s@]+@[^\s@]+|https:\/\/\S+)$/i.test(u));
  return uris.length ? uris : null;
}

const text = (v: unknown): string => (v === null ? '' : JSON.stringify(v));

/** Counters in the order both store engines give them: by policy domain, policy, successes first, failure. */
export function compareCounts(a: TlsCount, b: TlsCount): number {
  const keys = (c: TlsCount) => [c.policy.domain, text(c.policy), c.failure ? '1' : '0', text(c.failure)];
  const ka = keys(a);
  const kb = keys(b);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
  return 0;
}
