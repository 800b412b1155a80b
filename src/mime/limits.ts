import { Readable } from 'node:stream';

/**
 * Limits on the MIME structure of received mail, shared by every parse of it (receipt, the
 * inbound API, bounce and complaint reports), so a message accepted at receipt is one the API
 * can always show. mailparser's splitter (mailsplit) enforces the first two while parsing and
 * fails with EMAXLEN past them.
 */
export const MIME_LIMITS = {
  /** The largest header section of the message or of any part, in bytes (mailsplit's maxHeadSize). */
  maxHeadSize: 1024 * 1024,
  /** The most MIME parts in one message, nested ones included (mailsplit's maxChildNodes). */
  maxChildNodes: 1000,
} as const;

/** Reports are read from at most their first 10 MiB (a bounce that carries a huge original keeps its report up front). */
export const MAX_REPORT_BYTES = 10 * 1024 * 1024;

/** MIME bombs: more parts than any real message or report has (deep nesting needs parts too). */
export const MAX_MIME_PARTS = MIME_LIMITS.maxChildNodes;

/**
 * Whether a message has more Content-Type fields than `MAX_MIME_PARTS` (counted on raw bytes,
 * without parsing): the cheap first look that spares a parse of an obvious bomb. Parts without
 * a Content-Type field are caught by the parser's own count. Read a window at a time, so a
 * large message is never copied whole into a string.
 */
export function tooComplex(raw: Buffer): boolean {
  const field = /(?:^|\n)content-type:/gi;
  const WINDOW = 1024 * 1024;
  let n = 0;
  for (let at = 0; at < raw.length; at += WINDOW) {
    // Each window overlaps the next by the pattern's length less one, and counts only the
    // matches that start inside it, so a field split across two windows is counted once.
    const text = raw.toString('latin1', at, at + WINDOW + 13);
    field.lastIndex = 0;
    for (let m = field.exec(text); m && m.index < WINDOW; m = field.exec(text)) {
      if (m.index === 0 && at > 0 && m[0][0] !== '\n') continue; // "^" matches a window's start, not a line's
      if (++n > MAX_MIME_PARTS) return true;
    }
  }
  return false;
}

/** What a parse failure means to the sender, when it is one of the limits above. */
export function mimeLimitProblem(e: unknown): string | undefined {
  if ((e as { code?: unknown }).code !== 'EMAXLEN') return undefined;
  return /child nodes/i.test((e as Error).message)
    ? `more than ${MIME_LIMITS.maxChildNodes} MIME parts`
    : `a header section larger than ${MIME_LIMITS.maxHeadSize / 1024 / 1024} MiB`;
}

/** The top-level header fields in order, unfolded, each value cut to 998 characters: enough to describe a message that is not parsed further. */
export function topHeaderFields(raw: Buffer, max = 256 * 1024): Array<[string, string]> {
  const head =
    raw
      .subarray(0, max)
      .toString('utf8')
      .split(/\r?\n\r?\n/)[0] ?? '';
  const out: Array<[string, string]> = [];
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0)
      out.push([
        line.slice(0, i).trim(),
        line
          .slice(i + 1)
          .trim()
          .slice(0, 998),
      ]);
  }
  return out;
}

const SLICE = 64 * 1024;

/**
 * A message as the parser should be given it: as it is when small, else as a stream of 64 KiB
 * slices (views, not copies). mailparser fed one large Buffer copies it through its splitter (a
 * 20 MiB message took 70 MB more to parse); fed slices, it holds little more than the message.
 */
export function parserInput(raw: Buffer): Buffer | Readable {
  if (raw.length <= SLICE) return raw;
  function* slices(): Generator<Buffer> {
    for (let at = 0; at < raw.length; at += SLICE) yield raw.subarray(at, at + SLICE);
  }
  return Readable.from(slices(), { objectMode: false });
}
