import { randomBytes } from 'node:crypto';
import type { Report } from '../../../src/domain/report.js';
import { returnPath } from '../../../src/domain/return-path.js';
import type { Store } from '../../../src/store/store.js';
import { contract, readEvents, send, sender } from '../../helpers/stores.js';

// The store's contract on both engines: received mail, the reports that come back to a return
// path or the feedback address, and the inbound limits.

const secret = randomBytes(32);
const auth = { spf: 'pass', dkim: 'none', dmarc: 'none' };

async function receiving(s: Store, customerId: number) {
  const d = await s.domains.add({ customerId, name: 'in.example', receiving: true, now: 1 });
  return (await s.domains.receiving(d.name))!;
}

const inbound = (customerId: number, domainId: number) => ({
  customerId,
  domainId,
  mailFrom: 'alice@example.org',
  rcptTo: ['support@in.example'],
  remoteIp: '192.0.2.1',
  helo: 'mx.example.org',
  fromHeader: 'Alice <alice@example.org>',
  to: ['support@in.example'],
  subject: 'Help',
  messageId: 'abc@example.org',
  attachments: 0,
  auth,
});

contract(
  'a received message is stored per customer, counted against its limits, and fires email.received',
  async (t, s) => {
    const who = await sender(s);
    const d = await receiving(s, who.customerId);
    const raw = Buffer.from('From: alice@example.org\r\nSubject: Help\r\n\r\nbody\r\n');
    const ids = await s.inbound.receive({
      stores: [inbound(who.customerId, d.id)],
      report: null,
      reports: [],
      raw,
      secret,
      now: 120_000,
    });
    t.equal(ids.length, 1);
    t.match(ids[0], /^in_/);
    const row = (await s.inbound.get(ids[0]!, who.customerId))!;
    t.match(row, {
      mail_from: 'alice@example.org',
      remote_ip: '192.0.2.1',
      size: raw.length,
      subject: 'Help',
      attachments: 0,
    });
    t.same(Buffer.from(row.raw), raw, 'the bytes as received');
    t.same(JSON.parse(row.rcpt_to), ['support@in.example']);
    t.equal(await s.inbound.get(ids[0]!, who.customerId + 1), undefined);
    t.equal(await s.inbound.size(ids[0]!, who.customerId), raw.length);
    t.same(
      (await s.inbound.list({ customerId: who.customerId, limit: 10 })).map((r) => r.id),
      ids,
    );
    const ev = await readEvents(s, 1);
    t.match(ev, [{ type: 'email.received', customerId: who.customerId }]);
    t.match(JSON.parse(ev[0]!.body).data, {
      id: ids[0],
      from: 'Alice <alice@example.org>',
      size: raw.length,
      spf: 'pass',
    });
    const limits = { ratePerMinute: 1, monthlyLimit: 0 };
    t.match(
      await s.inbound.checkLimits(d, limits, 120_001),
      { ok: false, limit: 'rate', windowEndsAt: 180_000 },
      'one a minute: the second waits',
    );
    t.same(await s.inbound.checkLimits(d, limits, 180_000), { ok: true }, 'the next minute');
    t.match(await s.inbound.checkLimits(d, { ratePerMinute: 0, monthlyLimit: 1 }, 180_000), {
      ok: false,
      limit: 'monthly',
    });
    t.same(
      await s.inbound.checkLimits({ ...d, monthlyLimit: 5 }, { ratePerMinute: 0, monthlyLimit: 1 }, 180_000),
      { ok: true },
      "the domain's own limit first",
    );
  },
);

contract('inbound.limited fires once per domain and hour', async (t, s) => {
  const who = await sender(s);
  const d = await receiving(s, who.customerId);
  t.ok(await s.inbound.recordLimited(d, 'rate', 60_000, 1000));
  t.notOk(await s.inbound.recordLimited(d, 'rate', 60_000, 2000));
  t.notOk(await s.inbound.recordLimited(d, 'monthly', 60_000, 3_600_999));
  t.ok(await s.inbound.recordLimited(d, 'rate', 60_000, 3_601_000));
  const ev = await readEvents(s, 2);
  t.same(
    ev.map((e) => JSON.parse(e.body).data),
    [
      { domain: 'in.example', limit: 'rate', window_ends_at: new Date(60_000).toISOString() },
      { domain: 'in.example', limit: 'rate', window_ends_at: new Date(60_000).toISOString() },
    ],
  );
});

const bounceOf = (address: string, status = '5.1.1'): Report => ({
  kind: 'dsn',
  originalMessageId: null,
  recipients: [
    {
      address,
      action: 'failed',
      status,
      replyCode: 550,
      diagnostic: 'user unknown',
      classification: 'unknown_recipient',
      permanent: true,
      suppress: true,
      originalRecipient: null,
    } as Report['recipients'][number],
  ],
  feedback: null,
  originalSender: null,
});

contract(
  'a report tied by its token bounces or complains of that recipient, once; every report is kept',
  async (t, s) => {
    const who = await sender(s);
    const m = await send(s, who, { to: ['a@example.net', 'b@example.net'], now: 1000 });
    const claimed = await s.delivery.claim('w', 1000, 10);
    await s.delivery.record({
      results: claimed.map((c) => ({
        ...c,
        outcome: {
          kind: 'delivered',
          reply: { code: 250, enhanced_code: '2.0.0', message: 'ok', classification: 'delivered' },
          mx: 'mx',
          tls: false,
          tlsVerified: false,
        },
      })),
      composed: new Map(),
      postpone: [],
      policy: { retrySchedule: [60_000], maxQueueTime: 3_600_000 },
      now: 2000,
    });
    const a = claimed.find((c) => c.recipient.address === 'a@example.net')!.recipient;
    const b = claimed.find((c) => c.recipient.address === 'b@example.net')!.recipient;
    const rp = (id: number) => returnPath(secret, id, 'bounces.example');
    const raw = Buffer.from('report');
    const receive = (report: Report, rcptTo: string, route: 'bounce' | 'feedback' = 'bounce') =>
      s.inbound.receive({ stores: [], report, reports: [{ mailFrom: '', rcptTo, route }], raw, secret, now: 3000 });
    await receive(bounceOf('a@example.net'), rp(a.id));
    await receive(bounceOf('a@example.net'), rp(a.id));
    const complaint: Report = {
      kind: 'arf',
      originalMessageId: null,
      recipients: [],
      feedback: { feedbackType: 'abuse', userAgent: 'FBL/1.0', arrivalDate: null, recipient: null },
      originalSender: rp(b.id),
    };
    await receive(complaint, 'fbl@example.com', 'feedback');
    await receive(complaint, 'fbl@example.com', 'feedback');
    await receive(bounceOf('b@example.net'), rp(99_999), 'bounce');
    await receive({ ...complaint, originalSender: null }, 'fbl@example.com', 'feedback');
    const view = (await s.messages.get(who.customerId, m.messageId))!;
    t.same(
      view.events.map((e) => `${e.type} ${e.data.recipient}`),
      [
        'email.delivered a@example.net',
        'email.delivered b@example.net',
        'email.bounced a@example.net',
        'recipient.suppressed a@example.net',
        'email.complained b@example.net',
        'recipient.suppressed b@example.net',
      ],
      'one bounce and one complaint, each once; the untied reports change nothing',
    );
    t.match(view.events[2]!.data, { bounce_type: 'async', response: { code: 550, enhanced_code: '5.1.1' } });
    t.match(view.events[4]!.data, { feedback_type: 'abuse', user_agent: 'FBL/1.0' });
    t.same(
      view.recipients.map((r) => [r.state, r.attempts]),
      [
        ['bounced', 1],
        ['complained', 1],
      ],
    );
    t.match(await s.admin.status(4000), { inbound: { reports_unmatched: 2 } }, 'the untied ones kept, tied to no one');
  },
);
