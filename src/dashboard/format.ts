/**
 * Numbers and times as the dashboard's pages say them, as plain text (the template escapes it):
 * counts with their noun in the right number.
 */

/** "1 attempt", "2 attempts", "0 attempts"; `many` when the plural is not the noun and an s. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
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
  const text = s < 60 ? `${s} s` : min < 60 ? `${min} min` : h < 48 ? `${h} h` : days < 365 ? plural(days, 'day') : plural(Math.floor(days / 365), 'year');
  return d < 0 ? `${text} ago` : `in ${text}`;
}

/** A time exactly, as a title shows it: "2026-11-23 10:00:00Z" (UTC). */
export function exactTime(t: number): string {
  return new Date(t).toISOString().replace('T', ' ').slice(0, 19) + 'Z';
}
