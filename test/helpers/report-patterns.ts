import t from 'tap';
import type { ReportRecipient } from '../../src/domain/report.js';
import { readReport } from '../../src/reports/read.js';

// The report reader's pattern tables (test/unit/reports/recipients.test.ts, statuses.test.ts,
// signs.test.ts): each pattern the reader knows, in a small message written in the shape of the
// mail systems that use it (the wording is theirs, the rest is ours), beside the reading it must
// give. The corpus test reads real bounces; these pin down one pattern each, so that a rule that
// breaks says which sender's wording it broke.

/** A message from its lines: header fields, a blank line, the body (LF in the source, CRLF on the wire). */
export function mail(text: string): Buffer {
  return Buffer.from(text.replace(/^\n/, '').replace(/\r?\n/g, '\r\n'), 'latin1');
}

/** A multipart/report: the notification, the delivery-status fields, and the original's headers. */
export function report(
  notification: string,
  fields: string,
  original = 'From: shop@example.com\nTo: bob@example.net\nSubject: Your order\n',
): Buffer {
  return mail(`
From: Mail Delivery System <MAILER-DAEMON@mx.example.org>
To: bounces+tok@mail.example.com
Subject: Undelivered Mail Returned to Sender
Content-Type: multipart/report; report-type=delivery-status; boundary=b

--b
Content-Type: text/plain

${notification}
--b
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org

${fields}
--b
Content-Type: text/rfc822-headers

${original}
--b--
`);
}

type Expected = Partial<
  Pick<
    ReportRecipient,
    'action' | 'status' | 'replyCode' | 'classification' | 'permanent' | 'suppress' | 'originalRecipient'
  >
> & { address: string };

export interface PatternCase {
  /** What the reader must do, as a sentence. */
  says: string;
  raw: Buffer;
  /** The failed recipients, all of them, in order; none for a message that is not a bounce. */
  recipients: Expected[] | 'none';
}

/** One test a case, named by what it says. */
export function check(cases: PatternCase[]): void {
  for (const c of cases) {
    t.test(c.says, async (t) => {
      const r = readReport(c.raw);
      if (c.recipients === 'none') {
        t.equal(r.kind, 'none', 'not a bounce');
        t.same(r.recipients, []);
        return;
      }
      t.equal(r.kind, 'dsn');
      t.same(
        r.recipients.map((x) => x.address),
        c.recipients.map((x) => x.address),
        'the failed recipients, and no one else',
      );
      for (const [i, e] of c.recipients.entries()) t.match(r.recipients[i], e, e.address);
    });
  }
}
