/**
 * Numbers and times as the dashboard's pages say them, as plain text (the template escapes it):
 * counts with their noun in the right number.
 */

/** "1 attempt", "2 attempts", "0 attempts"; `many` when the plural is not the noun and an s. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${noun(n, one, many)}`;
}

/** The noun alone, in the number `n` asks for (where the count is shown apart from it). */
export function noun(n: number, one: string, many = `${one}s`): string {
  return n === 1 ? one : many;
}

/**
 * How far `t` is from `now`, in words: "just now", "40 s ago", "3 min ago", "5 h ago", "2 days
 * ago", "in 2 h" (a scheduled time, a next attempt). Each unit is rounded and gives way to the
 * next at its 60 (seconds, minutes), 48 (hours) or 365 (days).
 */
export function relativeTime(t: number, now: number): string {
  const d = t - now;
  const s = Math.round(Math.abs(d) / 1000);
  if (s < 5) return d <= 0 ? 'just now' : 'in a moment';
  const min = Math.round(s / 60);
  const h = Math.round(s / 3600);
  const days = Math.round(s / 86400);
  const text =
    s < 60
      ? `${s} s`
      : min < 60
        ? `${min} min`
        : h < 48
          ? `${h} h`
          : days < 365
            ? plural(days, 'day')
            : plural(Math.floor(days / 365), 'year');
  return d < 0 ? `${text} ago` : `in ${text}`;
}

/** A time exactly, as a title shows it: "2026-11-23 10:00:00Z" (UTC). */
export function exactTime(t: number): string {
  return new Date(t).toISOString().replace('T', ' ').slice(0, 19) + 'Z';
}

/** A reply as a person reads it: its codes, what it was taken to mean, and its words. */
export interface ReplyParts {
  /** "550 5.1.1"; empty when it has no code. */
  status: string;
  /** A failure's classification in words ("unknown recipient", "unclassified"); empty for an acceptance (2xx) and when there is none. */
  meaning: string;
  text: string;
}

/**
 * A stored reply (recipients.last_response, an event's response: {code, enhanced_code, message,
 * classification}) in parts; `{suppressed: reason}`, what a recipient refused at sending keeps,
 * says so. Anything else: undefined.
 */
export function replyParts(v: unknown): ReplyParts | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const r = v as Record<string, unknown>;
  const str = (x: unknown) => (typeof x === 'string' || typeof x === 'number' ? String(x) : '');
  if (typeof r.suppressed === 'string')
    return {
      status: '',
      meaning: 'suppressed',
      text: `Not sent: the address is on the suppression list (${words(r.suppressed)}).`,
    };
  const status = [str(r.code), str(r.enhanced_code)].filter((x) => x !== '' && x !== '0').join(' ');
  const text = str(r.message);
  if (!status && !text) return undefined;
  // What a reply was taken to mean matters for a failure; an acceptance means what it says.
  const failure = !(typeof r.code === 'number' && r.code >= 200 && r.code < 300);
  const meaning = failure ? (r.classification === 'other' ? 'unclassified' : words(str(r.classification))) : '';
  return { status, meaning, text };
}

/** An identifier as words: "unknown_recipient" → "unknown recipient". */
function words(id: string): string {
  return id.replaceAll('_', ' ');
}

/**
 * A URL short enough for a row: without "https://" (an http:// one keeps its scheme, worth
 * seeing), and past `max` characters cut in the middle, so the host and the end of the path
 * stay ("hooks.example.com/posthaste/…/events"). The full URL goes in a title beside it.
 */
export function shortUrl(url: string, max = 60): string {
  const s = url.startsWith('https://') ? url.slice('https://'.length) : url;
  if (s.length <= max) return s;
  const head = Math.ceil((max - 1) * 0.6);
  return `${s.slice(0, head)}…${s.slice(s.length - (max - 1 - head))}`;
}

/** A size as people read it: "1 byte", "512 bytes", "1.5 KiB", "25 MiB" (one decimal under 10). */
export function byteSize(n: number): string {
  if (n < 1024) return plural(n, 'byte');
  const [v, unit] = n < 1024 ** 2 ? [n / 1024, 'KiB'] : n < 1024 ** 3 ? [n / 1024 ** 2, 'MiB'] : [n / 1024 ** 3, 'GiB'];
  return `${v < 10 ? (Math.round(v * 10) / 10).toString() : Math.round(v).toString()} ${unit}`;
}
