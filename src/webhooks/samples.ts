import type { EventType } from '../domain/events.js';
import { isoTime } from '../lib/clock.js';

/** What every message event carries, for a test event. */
function baseOf(now: number) {
  return {
    email_id: 0,
    message_id: '01jtestmessage0000000000000@example.com',
    // The id in the Message-ID field: here an application's own, as its mailer wrote it.
    header_message_id: '173219000012.4242.7001@app.example.com',
    from: 'Example Shop <orders@example.com>',
    subject: 'Your order #1234 has shipped',
    recipient: 'alice@example.org',
    sandbox: false,
    timestamp: isoTime(now),
    metadata: { order_id: '1234', test: 'true' },
    tags: ['order-shipped'],
  };
}

type Base = ReturnType<typeof baseOf>;

/** Each type's test data, from what every message event carries and the time. */
const SAMPLES: Record<EventType, (base: Base, now: number) => Record<string, unknown>> = {
  'email.delivered': (base) => ({
    ...base,
    response: { code: 250, enhanced_code: '2.0.0', message: 'OK 1732190000 a1b2c3d4e5 - gsmtp' },
    mx: 'mx.example.org',
    tls: true,
    tls_verified: false,
    attempt: 1,
  }),
  'email.deferred': (base, now) => ({
    ...base,
    response: {
      code: 451,
      enhanced_code: '4.7.1',
      classification: 'greylisted',
      message: 'Recipient address rejected: Greylisted, try again later',
    },
    attempt: 1,
    next_attempt_at: isoTime(now + 60_000),
  }),
  'email.bounced': (base) => ({
    ...base,
    bounce_type: 'hard',
    response: {
      code: 550,
      enhanced_code: '5.1.1',
      classification: 'unknown_recipient',
      message: 'The email account that you tried to reach does not exist.',
    },
  }),
  'email.complained': (base) => ({
    ...base,
    feedback_type: 'abuse',
    user_agent: 'Yahoo!-Mail-Feedback/2.0',
    arrival_date: base.timestamp,
  }),
  'recipient.suppressed': (base) => ({
    recipient: base.recipient,
    reason: 'hard_bounce',
    email_id: 0,
    message_id: base.message_id,
    header_message_id: base.header_message_id,
    sandbox: false,
    timestamp: base.timestamp,
  }),
  'recipient.unsubscribed': (base) => ({
    recipient: base.recipient,
    reason: 'unsubscribe',
    method: 'one_click',
    email_id: 0,
    message_id: base.message_id,
    header_message_id: base.header_message_id,
    timestamp: base.timestamp,
  }),
  'email.received': () => ({
    id: 'in_test0000000000000000',
    from: 'Bob <bob@example.net>',
    to: ['support@in.example.com'],
    subject: 'Question about my order',
    message_id: '<CAtest@mail.example.net>',
    size: 4821,
    attachments: 1,
    spf: 'pass',
    dkim: 'pass',
    dmarc: 'pass',
  }),
  'inbound.limited': (_, now) => ({
    domain: 'in.example.com',
    limit: 'rate',
    window_ends_at: isoTime(now + 60_000),
  }),
  'customer.warning': (base) => customerSample('warning', 'reputation', 'bounce rate 5.1% (threshold 4%)', base),
  'customer.paused': (base) => customerSample('paused', 'reputation', 'bounce rate 9.4% (threshold 8%)', base),
  'customer.resumed': (base) => customerSample('ok', 'administrator', 'resumed by an administrator', base),
  'domain.verified': (_, now) => ({
    domain: 'example.com',
    verified_at: isoTime(now),
    records: [
      { purpose: 'verification', name: '_posthaste.example.com', found: true },
      { purpose: 'dkim', name: 'posthaste._domainkey.example.com', found: true },
    ],
  }),
  'domain.verification_failed': () => ({
    domain: 'example.com',
    verified_at: null,
    records: [
      { purpose: 'verification', name: '_posthaste.example.com', found: true },
      { purpose: 'dkim', name: 'posthaste._domainkey.example.com', found: false },
    ],
  }),
};

/** A customer.* event's data (domain/reputation.ts, stateEventData). */
function customerSample(state: string, by: string, reason: string, base: Base): Record<string, unknown> {
  const bounce = state === 'warning' ? 5.1 : 9.4;
  return {
    customer: 'shop',
    state,
    reason,
    by,
    rates: {
      bounce_rate: bounce,
      complaint_rate: 0.02,
      recipients: 1000,
      hard_bounces: bounce * 10,
      expired: 3,
      delivered: 906,
      complaints: 0,
    },
    window: { days: 7, min_recipients: 200 },
    threshold: state === 'warning' ? { bounce_rate: 4, complaint_rate: 0.08 } : { bounce_rate: 8, complaint_rate: 0.3 },
    timestamp: base.timestamp,
  };
}

/** Realistic data for a test event of each type (`POST /api/v1/webhooks/:id/test`). */
export function sampleData(type: EventType, now: number): Record<string, unknown> {
  return SAMPLES[type](baseOf(now), now);
}
