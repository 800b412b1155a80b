/**
 * What text may go into a header field posthaste writes (docs/api.md, "Limits").
 *
 * RFC 5322 2.2: a header field body is printable characters and WSP; 2.1.1: a line is at most
 * 998 octets. nodemailer's composer passes ASCII header text through as given and folds it at
 * whitespace only, so both rules are enforced on the request, before anything is queued.
 */

/** RFC 5322 2.1.1: each line of a message is at most 998 characters, CRLF excluded. */
export const MAX_LINE_LENGTH = 998;

/**
 * Any control character but HTAB: C0 (CR, LF, NUL, and VT and FF, which some receivers split
 * lines on, so a header carrying them could read as two), DEL, and C1 (NEL is a line break to
 * some software).
 */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f]/;

export function hasControl(s: string): boolean {
  return CONTROL.test(s);
}

/** The problem text for a value with a control character, the same wherever header text is refused. */
export const CONTROL_PROBLEM =
  'must not contain a control character (line breaks, NUL, VT, FF and the like; only tab is allowed)';

/**
 * An upper bound on the longest physical line the composer writes for `value` after `prefix`
 * characters (the field name and ": "). nodemailer folds a header only before whitespace, so a
 * run of printable ASCII, with the whitespace in front of it, stays on one line; the prefix is
 * counted with every run, which covers the first line. Non-ASCII words go out as RFC 2047
 * encoded-words, which the composer splits into short words itself. One pass, no regular
 * expression (a backtracking pattern over whitespace is quadratic on long values).
 */
export function longestHeaderLine(prefix: number, value: string): number {
  let longest = 0;
  let space = 0; // whitespace in front of the current run
  let run = 0; // printable ASCII of the current run
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c > 0x20 && c < 0x7f) {
      run++;
      continue;
    }
    if (run > 0) {
      longest = Math.max(longest, space + run);
      run = 0;
      space = 0;
    }
    space = c === 0x20 || c === 0x09 ? space + 1 : 0;
  }
  return prefix + Math.max(longest, space + run);
}

/** The problem with header text that cannot be folded into lines of at most 998 characters, if any. */
export function foldProblem(prefix: number, value: string): string | undefined {
  const longest = longestHeaderLine(prefix, value);
  if (longest <= MAX_LINE_LENGTH) return undefined;
  return `has a run of text without whitespace that makes a header line of ${longest} characters; a line is at most ${MAX_LINE_LENGTH} (RFC 5322 2.1.1): add spaces or shorten it`;
}
