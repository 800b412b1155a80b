import type { EventType } from '../domain/events.js';
import { isoTime } from '../lib/clock.js';

/** Realistic data for a test event of each type (`POST /api/v1/webhooks/:id/test`). */
export function sampleData(type: EventType, now: number): Record<string, unknown> {
  const ts = isoTime(now);
  const base = {
    email_id: 0,
    message_id: '01jtestmessage0000000000000@example.com',
    from: 'Example Shop <orders@example.com>',
    subject: 'Your order #1234 has shipped',
    recipient: 'alice@example.org',
    sandbox: false,
    timestamp: ts,
    metadata: { order_id: '1234', test: 'true' },
    tags: ['order-shipped'],
  };
  switch (type) {
    case 'email.delivered':
      return {
        ...base,
        response: { code: 250, enhanced_code: '2.0.0', message: 'OK 1732190000 a1b2c3d4e5 - gsmtp' },
        mx: 'mx.example.org',
        tls: true,
        tls_verified: false,
        attempt: 1,
      };
    case 'email.deferred':
      return {
        ...base,
        response: {
          code: 451,
          enhanced_code: '4.7.1',
          classification: 'greylisted',
          message: 'Recipient address rejected: Greylisted, try again later',
        },
        attempt: 1,
        next_attempt_at: isoTime(now + 60_000),
      };
    case 'email.bounced':
      return {
        ...base,
        bounce_type: 'hard',
        response: {
          code: 550,
          enhanced_code: '5.1.1',
          classification: 'unknown_recipient',
          message: 'The email account that you tried to reach does not exist.',
        },
      };
    case 'email.complained':
      return { ...base, feedback_type: 'abuse', user_agent: 'Yahoo!-Mail-Feedback/2.0', arrival_date: ts };
    case 'recipient.suppressed':
      return {
        recipient: base.recipient,
        reason: 'hard_bounce',
        email_id: 0,
        message_id: base.message_id,
        sandbox: false,
        timestamp: ts,
      };
    case 'email.received':
      return {
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
      };
    case 'inbound.limited':
      return { domain: 'in.example.com', limit: 'rate', window_ends_at: isoTime(now + 60_000) };
  }
}
