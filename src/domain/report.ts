import type { Classification } from './classify.js';
import type { Reply } from './outcome.js';

/**
 * What a message that came back says, as the report reader (reports/read.ts) finds it: a
 * delivery report, a complaint, or neither. Plain data, shared by the reader, the store that
 * applies it and the CLI that prints it.
 */

/** A DSN's Action (RFC 3464 2.3.3). */
export type Action = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';

export interface ReportRecipient {
  /**
   * The failed recipient: the report's Final-Recipient (or the address its text names). The one
   * suppressed. Empty where the report names no one (a one-line refusal): the token of the return
   * path it came to says whom it is about.
   */
  address: string;
  /**
   * The address the sender gave (RFC 3464 2.3.1, Original-Recipient, without its "rfc822;"), or
   * the one the text says the failed address was reached through (Postfix's and Sendmail's
   * "expanded from", Exim's "generated from"); null where the report names none.
   */
  originalRecipient: string | null;
  action: Action;
  /** Enhanced status code (RFC 3463), from the report or its text; null when neither gives one. */
  status: string | null;
  replyCode: number | null;
  diagnostic: string | null;
  classification: Classification;
  /** The reporting MTA gave up on this recipient (not a delay warning, not a success). */
  permanent: boolean;
  /** Permanent, and the classification blames the address (domain/outcome.ts, the policy). */
  suppress: boolean;
}

export interface Feedback {
  feedbackType: string;
  userAgent: string | null;
  arrivalDate: string | null;
  /** The complaining recipient, where the report names one. */
  recipient: string | null;
}

export interface Report {
  kind: 'dsn' | 'arf' | 'none';
  /** Message-ID of the original message (without angle brackets), where the report carries it. */
  originalMessageId: string | null;
  recipients: ReportRecipient[];
  feedback: Feedback | null;
  /** The original's envelope sender (Original-Mail-From, Return-Path): posthaste's return path carries a token naming the recipient. */
  originalSender: string | null;
}

/** The SMTP envelope a report arrived with, and which of posthaste's addresses it came to. */
export interface ReportEnvelope {
  mailFrom: string;
  rcptTo: string;
  route: 'bounce' | 'feedback';
}

/** The reply a report states for one recipient, as events and the API show replies. */
export function reportReply(r: ReportRecipient): Reply {
  const code = r.replyCode ?? (r.status?.startsWith('5') ? 550 : r.status?.startsWith('4') ? 450 : 0);
  return { code, enhanced_code: r.status ?? '', message: r.diagnostic ?? '', classification: r.classification };
}
