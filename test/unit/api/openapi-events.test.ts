// The webhook events as the document states them (components.schemas.*Event, which the `webhooks`
// section POSTs) against the events the code makes: every transition of domain/transitions.ts, the
// inbound events the store writes, and the sample events of `POST /api/v1/webhooks/{id}/test`.
// (Message events are also checked on every GET /api/v1/emails/{message_id} of the integration
// tests, through test/helpers/contract.ts.)
import t from 'tap';
import { openApiDocument } from '../../../src/api/openapi/document.js';
import { eventSchemaName } from '../../../src/api/openapi/events.js';
import { EVENT_TYPES, type EventType } from '../../../src/domain/events.js';
import { reply } from '../../../src/domain/outcome.js';
import {
  asyncBounceTransition,
  complaintTransition,
  type MessageFacts,
  outcomeTransition,
  suppressedEventData,
} from '../../../src/domain/transitions.js';
import { isoTime } from '../../../src/lib/clock.js';
import { eventId } from '../../../src/lib/ids.js';
import { ensureDefaultCustomer } from '../../../src/store/sqlite/customers.js';
import { migrate, openDb } from '../../../src/store/sqlite/db.js';
import { addDomain, receivingDomain, setReceiving } from '../../../src/store/sqlite/domains.js';
import { recordLimited, storeInbound } from '../../../src/store/sqlite/inbound.js';
import { sampleData } from '../../../src/webhooks/samples.js';
import { Contract } from '../../helpers/contract.js';
import { tempDir } from '../../helpers/env.js';

const contract = new Contract(openApiDocument());
const now = Date.UTC(2026, 10, 24, 9, 0, 0);
const envelope = (type: EventType, data: Record<string, unknown>) => ({
  id: eventId(now),
  type,
  timestamp: isoTime(now),
  data,
});

/** The problems of one event by the schema of its type; empty when it holds. */
function problems(event: { type: EventType }): string[] {
  const type = event.type;
  const v = contract.validator(['components', 'schemas', eventSchemaName(type)]);
  return v(event) ? [] : (v.errors ?? []).map((e) => `${type}: ${e.instancePath} ${e.message}`);
}

const message: MessageFacts = {
  id: 7,
  customerId: 1,
  messageId: '01jtest0000000000000000000@example.com',
  sandbox: false,
  fromHeader: 'Shop <orders@example.com>',
  subject: 'Your order',
  metadata: { order: '1234' },
  tags: ['receipt'],
  createdAt: now - 60_000,
};
const recipient = { id: 3, address: 'alice@example.org', attempts: 0 };
const policy = { retrySchedule: [60_000, 300_000], maxQueueTime: 86_400_000 };
const ok = reply(250, '2.0.0', 'OK', 'other');
const busy = reply(451, '4.7.1', 'Greylisted', 'greylisted');
const gone = reply(550, '5.1.1', 'No such user', 'unknown_recipient');

t.test('every event a transition makes is what the document says', async (t) => {
  const transitions = [
    outcomeTransition(
      message,
      recipient,
      { kind: 'delivered', reply: ok, mx: 'mx.example.org', tls: true, tlsVerified: false },
      policy,
      now,
    ),
    outcomeTransition(message, recipient, { kind: 'deferred', reply: busy }, policy, now),
    outcomeTransition(message, recipient, { kind: 'deferred', reply: busy }, { ...policy, maxQueueTime: 1 }, now),
    outcomeTransition(
      message,
      recipient,
      { kind: 'bounced', bounceType: 'hard', reply: gone, suppress: true },
      policy,
      now,
    ),
    asyncBounceTransition(message, recipient, reply(0, '', '', 'other'), false, now),
    complaintTransition(message, recipient, { feedback_type: 'abuse' }, now),
    complaintTransition(
      message,
      recipient,
      { feedback_type: 'abuse', user_agent: 'Yahoo!-Mail-Feedback/2.0', arrival_date: 'Thu, 8 Mar 2005 14:00:00 EDT' },
      now,
    ),
  ];
  const events = transitions.flatMap((tr) => tr.events.map((e) => envelope(e.type, e.data)));
  events.push(envelope('recipient.suppressed', suppressedEventData(message, recipient.address, 'hard_bounce', now)));
  t.same(
    [...new Set(events.map((e) => e.type))].sort(),
    ['email.bounced', 'email.complained', 'email.deferred', 'email.delivered', 'recipient.suppressed'],
    'every message event type',
  );
  t.same(events.flatMap(problems), []);
  t.not(
    problems(envelope('email.delivered', { ...events[0]!.data, tls: 'yes' })).length,
    0,
    'a wrong event is refused',
  );
  t.not(
    problems(envelope('email.bounced', { ...events[3]!.data, extra: 1 })).length,
    0,
    'an undocumented field is refused',
  );
});

t.test('the inbound events the store writes are what the document says', async (t) => {
  const dir = tempDir();
  const db = openDb(dir.path);
  t.teardown(() => {
    db.close();
    dir.remove();
  });
  migrate(db, now);
  ensureDefaultCustomer(db, now);
  const domain = addDomain(db, { customerId: 1, name: 'in.example.com', receiving: true, now });
  setReceiving(db, domain.id, true);
  const d = receivingDomain(db, 'in.example.com')!;
  storeInbound(
    db,
    {
      customerId: 1,
      domainId: d.id,
      mailFrom: 'bob@example.net',
      rcptTo: ['support@in.example.com'],
      remoteIp: '192.0.2.1',
      helo: 'mail.example.net',
      raw: Buffer.from('Subject: hi\r\n\r\nhello\r\n'),
      fromHeader: 'Bob <bob@example.net>',
      to: ['support@in.example.com'],
      subject: 'hi',
      messageId: '',
      attachments: 0,
      auth: { spf: 'none', dkim: 'none', dmarc: 'none' },
    },
    now,
  );
  recordLimited(db, d, 'monthly', now + 86_400_000, now);
  const events = db
    .all<{ body: string }>('SELECT body FROM events ORDER BY seq')
    .map((r) => JSON.parse(r.body) as { type: EventType });
  t.same(
    events.map((e) => e.type),
    ['email.received', 'inbound.limited'],
  );
  t.same(events.flatMap(problems), []);
});

t.test('test events (POST /api/v1/webhooks/{id}/test) are what the document says', async (t) => {
  for (const type of EVENT_TYPES) {
    const data = sampleData(type, now);
    t.same(problems(envelope(type, data)), [], type);
  }
});
