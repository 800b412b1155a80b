import t from 'tap';
import type { Report, ReportEnvelope } from '../../../src/domain/report.js';
import { reportKind } from '../../../src/store/model.js';

// What both engines keep a received report as (store/model/inbound.ts): what it was read as, and
// one that could not be read as what the address it came to expects.

const report = (kind: Report['kind']): Report => ({
  kind,
  originalMessageId: null,
  recipients: [],
  feedback: null,
  originalSender: null,
});
const to = (route: ReportEnvelope['route']): ReportEnvelope => ({ mailFrom: '', rcptTo: 'x@example.com', route });

t.test('a report is kept as what it was read as, an unreadable one as what its address expects', async (t) => {
  t.equal(reportKind(report('dsn'), to('feedback')), 'dsn', 'a DSN sent to the feedback address is still a DSN');
  t.equal(reportKind(report('arf'), to('bounce')), 'arf', 'an ARF report sent to a return path is still ARF');
  t.equal(reportKind(report('none'), to('feedback')), 'arf', 'unreadable, at the feedback address');
  t.equal(reportKind(report('none'), to('bounce')), 'dsn', 'unreadable, at a return path');
});
