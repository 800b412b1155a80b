/** MIME bombs: more parts than any real message or report has (deep nesting needs parts too). */
export const MAX_MIME_PARTS = 1000;

/** Whether a message is too complex to parse fully (counted on raw bytes, without parsing). */
export function tooComplex(raw: Buffer): boolean {
  const re = /^content-type:/gim;
  const text = raw.toString('latin1');
  let n = 0;
  while (re.exec(text)) if (++n > MAX_MIME_PARTS) return true;
  return false;
}

/** The top-level header block, unfolded: enough to describe a message that is not parsed further. */
export function topHeaders(raw: Buffer, max = 256 * 1024): Map<string, string> {
  const head = raw.subarray(0, max).toString('utf8').split(/\r?\n\r?\n/)[0] ?? '';
  const out = new Map<string, string>();
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) {
      const name = line.slice(0, i).trim().toLowerCase();
      if (!out.has(name)) out.set(name, line.slice(i + 1).trim().slice(0, 998));
    }
  }
  return out;
}
