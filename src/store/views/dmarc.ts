import type { DmarcMailInput, DmarcReportInput } from '../model.js';
import { MAX_UNREADABLE_BYTES } from '../model.js';

/**
 * DMARC reports' rows as both engines write them (views.ts): a report's policy and each row's
 * columns encoded (aligned 1 or 0, the DKIM and SPF results one JSON object), an unreadable
 * attachment kept with at most MAX_UNREADABLE_BYTES of its mail.
 */

/** A report's `policy` column. */
export function policyColumn(r: DmarcReportInput): string {
  return JSON.stringify(r.policy);
}

/** A row's columns after report_id: source_ip, count, disposition, dkim_aligned, spf_aligned, header_from, envelope_from, auth. */
export type DmarcRowColumns = [string, number, string, number, number, string, string | null, string];

export function dmarcRowColumns(w: DmarcReportInput['rows'][number]): DmarcRowColumns {
  return [
    w.sourceIp,
    w.count,
    w.disposition,
    w.dkimAligned ? 1 : 0,
    w.spfAligned ? 1 : 0,
    w.headerFrom,
    w.envelopeFrom,
    JSON.stringify({ dkim: w.dkim, spf: w.spf }),
  ];
}

/** The mail's unreadable attachments as dmarc_unreadable keeps them: received_at, name, error, raw. */
export function unreadableColumns(input: DmarcMailInput): Array<[number, string, string, Buffer]> {
  const raw = input.raw.subarray(0, MAX_UNREADABLE_BYTES);
  return input.unreadable.map((u) => [input.receivedAt, u.name, u.error, raw]);
}
