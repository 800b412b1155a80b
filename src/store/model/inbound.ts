import type { Report, ReportEnvelope } from '../../domain/report.js';
import { parseReturnToken, verpToken } from '../../domain/return-path.js';

/** The store's model for received mail: receiving domains, their limits, and stored messages. */

export interface ReceivingDomain {
  id: number;
  customerId: number;
  name: string;
  ratePerMinute: number | null;
  monthlyLimit: number | null;
}

export type LimitCheck = { ok: true } | { ok: false; limit: 'rate' | 'monthly'; windowEndsAt: number };

/** The inbound_usage periods a message counts in: its minute and its month (UTC). */
export function usagePeriods(now: number): { minute: string; month: string } {
  return { minute: `m:${Math.floor(now / 60_000)}`, month: `M:${new Date(now).toISOString().slice(0, 7)}` };
}

/**
 * Whether one more message fits a receiving domain's per-minute and monthly limits (its own, else
 * the defaults; 0: unlimited), given the messages counted in its minute and month; one rule for
 * both engines, which only count.
 */
export function inboundLimitCheck(
  d: ReceivingDomain,
  defaults: { ratePerMinute: number; monthlyLimit: number },
  used: { minute: number; month: number },
  now: number,
): LimitCheck {
  const rate = d.ratePerMinute ?? defaults.ratePerMinute;
  const monthly = d.monthlyLimit ?? defaults.monthlyLimit;
  if (monthly > 0 && used.month >= monthly) {
    const n = new Date(now);
    return { ok: false, limit: 'monthly', windowEndsAt: Date.UTC(n.getUTCFullYear(), n.getUTCMonth() + 1, 1) };
  }
  if (rate > 0 && used.minute >= rate)
    return { ok: false, limit: 'rate', windowEndsAt: (Math.floor(now / 60_000) + 1) * 60_000 };
  return { ok: true };
}

export interface StoredInbound {
  customerId: number;
  domainId: number;
  mailFrom: string;
  rcptTo: string[];
  remoteIp: string;
  helo: string;
  raw: Buffer;
  fromHeader: string;
  to: string[];
  subject: string;
  messageId: string;
  attachments: number;
  auth: { spf: string; dkim: string; dmarc: string };
}

/** The data of `email.received` for a message stored under `id` (docs/api.md, the events), one payload for both engines. */
export function receivedEventData(id: string, m: Omit<StoredInbound, 'raw'>, size: number) {
  return {
    id,
    from: m.fromHeader,
    to: m.to,
    subject: m.subject,
    message_id: m.messageId,
    size,
    attachments: m.attachments,
    spf: m.auth.spf,
    dkim: m.auth.dkim,
    dmarc: m.auth.dmarc,
  };
}

/**
 * The recipients a report may be about, as the ids their tokens name, first that of the return
 * path the report came to (a bounce), then that of the original's envelope sender the report
 * quotes (Original-Mail-From, or the original's Return-Path: a complaint); the engine takes the
 * first that is a recipient. Only a token posthaste issued names a recipient: a Message-ID or an
 * address is no secret (every recipient of a message sees both), so a report that names them and
 * carries no valid token is kept and changes nothing (docs/inbound.md, "Which recipient a report
 * is about").
 */
export function reportRecipientIds(secret: Buffer, report: Report, env: ReportEnvelope): number[] {
  const ids: number[] = [];
  for (const address of [env.rcptTo, report.originalSender]) {
    const token = verpToken(address);
    const id = token ? parseReturnToken(secret, token) : undefined;
    if (id !== undefined) ids.push(id);
  }
  return ids;
}

/**
 * What a report is kept as (`inbound_reports.kind`): what it was read as; one that could not be
 * read, as what its address expects (the feedback address an ARF report, a return path a DSN).
 */
export function reportKind(report: Report, env: ReportEnvelope): 'dsn' | 'arf' {
  return report.kind !== 'none' ? report.kind : env.route === 'feedback' ? 'arf' : 'dsn';
}

export interface InboundRow {
  id: string;
  customer_id: number;
  mail_from: string;
  rcpt_to: string;
  remote_ip: string;
  helo: string;
  raw: Buffer;
  size: number;
  from_header: string;
  subject: string;
  message_id: string;
  attachments: number;
  auth: string;
  created_at: number;
}

// units of work that take more than a row: plain data, since on SQLite they cross to the writer
// thread (store/sqlite/writer/) and on PostgreSQL they become one transaction's parameters

/** One inbound transaction: messages for receiving domains, and the report it is, for each of posthaste's addresses it came to. */
export interface ReceiveInput {
  /** The messages to store; their bytes are `raw`, sent once for all of them. */
  stores: Array<Omit<StoredInbound, 'raw'>>;
  /** What the message says as a report (read once), when it came to a return path or the feedback address. */
  report: Report | null;
  reports: ReportEnvelope[];
  raw: Uint8Array;
  secret: Uint8Array;
  now: number;
}
