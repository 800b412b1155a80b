import { randomBytes } from 'node:crypto';

/**
 * A TLS report as a mail (RFC 8460 5.3): the TLS-Report-Domain and TLS-Report-Submitter fields,
 * the subject naming the domain, the submitter and the report id, and a multipart/report of
 * report-type "tlsrpt" carrying the gzipped JSON as application/tlsrpt+gzip; pure.
 */
export interface TlsReportMail {
  from: string;
  to: string;
  domain: string;
  submitter: string;
  reportId: string;
  fileName: string;
  gzipped: Buffer;
  /** The Message-ID, bare. */
  messageId: string;
  date: Date;
}

/** The subject RFC 8460 5.3 gives. */
export const reportSubject = (m: Pick<TlsReportMail, 'domain' | 'submitter' | 'reportId'>): string =>
  `Report Domain: ${m.domain} Submitter: ${m.submitter} Report-ID: <${m.reportId}>`;

/** Base64 in lines of 76 characters. */
const base64Lines = (b: Buffer): string => (b.toString('base64').match(/.{1,76}/g) ?? []).join('\r\n');

/** The whole message, CRLF line ends, every line ASCII; the long subject folded. */
export function reportMessage(m: TlsReportMail): string {
  const boundary = `tlsrpt-${randomBytes(12).toString('hex')}`;
  const subject = reportSubject(m).replace(' Submitter:', '\r\n Submitter:').replace(' Report-ID:', '\r\n Report-ID:');
  const lines = [
    `From: ${m.from}`,
    `To: ${m.to}`,
    `Date: ${m.date.toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: <${m.messageId}>`,
    `Subject: ${subject}`,
    `TLS-Report-Domain: ${m.domain}`,
    `TLS-Report-Submitter: ${m.submitter}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type="tlsrpt";\r\n boundary="${boundary}"`,
    '',
    'This is a multipart message in MIME format.',
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=us-ascii',
    'Content-Transfer-Encoding: 7bit',
    '',
    `This is an aggregate TLS report (RFC 8460) from ${m.submitter} about ${m.domain}.`,
    '',
    `--${boundary}`,
    'Content-Type: application/tlsrpt+gzip',
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: attachment;\r\n filename="${m.fileName}"`,
    '',
    base64Lines(m.gzipped),
    '',
    `--${boundary}--`,
    '',
  ];
  return lines.join('\r\n');
}
