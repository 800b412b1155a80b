import { parseSuppressionEntry } from './addresses.js';

/**
 * A suppression list as a file (`posthaste suppressions import` and `export`; docs/operations.md,
 * "Suppressions in bulk"): one entry a line, an address or a whole domain (`@example.com`), or CSV
 * with the address first and the reason second (a first line `address,reason,…` is a header).
 * Blank lines and lines starting with `#` are skipped. Pure: the CLI reads and writes the file.
 */

/** The reasons an imported entry may give; `manual` when it gives none. */
export const IMPORT_REASONS = ['manual', 'hard_bounce', 'spam_complaint'] as const;
export type ImportReason = (typeof IMPORT_REASONS)[number];

export interface SuppressionFile {
  entries: Array<{ line: number; address: string; reason: ImportReason }>;
  refused: Array<{ line: number; text: string; error: string }>;
}

/** A CSV line's fields: split at commas outside double quotes, `""` inside quotes for one. */
export function csvFields(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted && c === '"' && line[i + 1] === '"') {
      cur += '"';
      i++;
    } else if (c === '"') quoted = !quoted;
    else if (c === ',' && !quoted) {
      out.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  out.push(cur.trim());
  return out;
}

export function parseSuppressionFile(text: string): SuppressionFile {
  const file: SuppressionFile = { entries: [], refused: [] };
  let first = true;
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = csvFields(line);
    const header = first && fields[0]!.toLowerCase() === 'address';
    first = false;
    if (header) continue;
    const refuse = (error: string) => file.refused.push({ line: i + 1, text: line, error });
    const entry = parseSuppressionEntry(fields[0]!);
    if (!entry.ok) {
      refuse(`"${fields[0]}" ${entry.error}`);
      continue;
    }
    const reason = fields[1] === undefined || fields[1] === '' ? 'manual' : fields[1];
    if (!(IMPORT_REASONS as readonly string[]).includes(reason)) {
      refuse(`the reason "${reason}" is not one of ${IMPORT_REASONS.join(', ')}`);
      continue;
    }
    file.entries.push({ line: i + 1, address: entry.value, reason: reason as ImportReason });
  }
  return file;
}

/** A field for CSV: quoted when it holds a comma, a quote or a line break. */
export const csvField = (v: string): string => (/[",\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);
