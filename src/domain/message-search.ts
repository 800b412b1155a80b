import { Problems } from './errors.js';

export const SEARCH_STATES = [
  'queued',
  'deferred',
  'delivered',
  'bounced',
  'complained',
  'suppressed',
  'canceled',
] as const;
export type SearchState = (typeof SEARCH_STATES)[number];

export interface MessageFilters {
  recipient?: string;
  /** Bare (bareMessageId): posthaste's id or the message's Message-ID field's. */
  messageId?: string;
  state?: SearchState;
  tag?: string;
  since?: number;
  until?: number;
}

/** The longest Message-ID searched or kept (RFC 5322 2.1.1: one line). */
export const MESSAGE_ID_MAX_LENGTH = 998;

/**
 * A Message-ID as messages are found by it: without the angle brackets and the space around it
 * (`<a@b>`, ` <a@b> ` and `a@b` are one id). posthaste's own id and the one in a message's
 * Message-ID field are both kept this way.
 */
export function bareMessageId(v: string): string {
  const t = v.trim();
  return t.startsWith('<') && t.endsWith('>') ? t.slice(1, -1).trim() : t;
}

/**
 * The id a Message-ID field's value carries (RFC 5322 3.6.4), bare: the first `<…>` in it (a
 * comment or a folded space around it does not count), else the value itself when it is one
 * word; undefined when neither, or when it is longer than MESSAGE_ID_MAX_LENGTH.
 */
export function messageIdOfField(value: string): string | undefined {
  const id = /<([^<>\s]+)>/.exec(value)?.[1] ?? (/^[^<>\s]+$/.test(value.trim()) ? value.trim() : undefined);
  return id !== undefined && id.length <= MESSAGE_ID_MAX_LENGTH ? id : undefined;
}

/** A time as ISO 8601 ("2026-11-23", "2026-11-23T10:00:00Z", "2026-11-23T10:00" in UTC); the API's time filters. */
export function parseTime(v: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(v)) return undefined;
  const t = Date.parse(/[T ]\d{2}:\d{2}/.test(v) && !/(Z|[+-]\d{2}:\d{2})$/.test(v) ? v.replace(' ', 'T') + 'Z' : v);
  return Number.isFinite(t) ? t : undefined;
}

/**
 * The message search filters of the API (`GET /api/v1/emails`) and the dashboard, from query
 * parameters: recipient, message_id, state, tag, since, until. Empty values are no filter.
 * `message_id` finds a message by posthaste's id or by the Message-ID field it carries (an
 * application's own, written by its mailer), bare (bareMessageId) either way.
 */
export function parseMessageFilters(q: Record<string, unknown>): MessageFilters | Problems {
  const p = new Problems();
  const out: MessageFilters = {};
  const str = (k: string): string | undefined => {
    const v = q[k];
    if (v === undefined || v === '') return undefined;
    if (typeof v !== 'string') {
      p.add(k, 'must be given once');
      return undefined;
    }
    return v.trim() || undefined;
  };
  const recipient = str('recipient');
  if (recipient !== undefined) {
    if (recipient.length > 320 || !recipient.includes('@')) p.add('recipient', 'must be an e-mail address');
    else out.recipient = recipient;
  }
  const messageId = str('message_id');
  if (messageId !== undefined) {
    // posthaste's id or the one in the message's Message-ID field, with or without angle brackets.
    if (messageId.length > MESSAGE_ID_MAX_LENGTH + 2) p.add('message_id', 'is too long');
    else if (bareMessageId(messageId) !== '') out.messageId = bareMessageId(messageId);
  }
  const state = str('state');
  if (state !== undefined) {
    if (!(SEARCH_STATES as readonly string[]).includes(state))
      p.add('state', `must be one of ${SEARCH_STATES.join(', ')}`);
    else out.state = state as SearchState;
  }
  const tag = str('tag');
  if (tag !== undefined) {
    if (tag.length > 100) p.add('tag', 'is too long (tags are at most 100 characters)');
    else out.tag = tag;
  }
  for (const k of ['since', 'until'] as const) {
    const v = str(k);
    if (v === undefined) continue;
    const t = parseTime(v);
    if (t === undefined) p.add(k, 'must be a date or time in ISO 8601, e.g. 2026-11-23 or 2026-11-23T10:00:00Z');
    else out[k] = t;
  }
  return p.empty ? out : p;
}
