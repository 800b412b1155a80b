import { domainToASCII } from 'node:url';
import { CONTROL_PROBLEM, foldProblem, hasControl } from './header-text.js';

/** A mailbox: `local@domain` with the domain in ASCII (IDNs converted to A-labels), and an optional display name. */
export interface Mailbox {
  /** addr-spec as it will be used on the wire: local part as given, domain lower-case ASCII. */
  address: string;
  local: string;
  domain: string;
  name?: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

// RFC 5322 atext, and the characters allowed inside a quoted-string (qtext) or a quoted-pair.
const ATEXT = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+$/;
const QUOTED_LOCAL = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** The longest display name accepted, in characters. */
export const DISPLAY_NAME_MAX_LENGTH = 256;
/** `Display Name <address>` as given: a quoted name of the longest kind, escapes and all, with the longest address. */
export const MAILBOX_MAX_LENGTH = 2 * DISPLAY_NAME_MAX_LENGTH + 2 + 1 + 256;
/** "Reply-To: " and the opening quote: the longest prefix a display name is written after. */
const NAME_PREFIX = 11;

function checkLocal(local: string): string | undefined {
  if (local.length === 0) return 'the local part is empty';
  if (Buffer.byteLength(local) > 64) return 'the local part is longer than 64 octets';
  if (local.startsWith('"')) return QUOTED_LOCAL.test(local) ? undefined : 'the quoted local part is malformed';
  const atoms = local.split('.');
  if (atoms.some((a) => a.length === 0)) return 'the local part has a leading, trailing or double dot';
  if (!atoms.every((a) => ATEXT.test(a))) return 'the local part has a character not allowed in an address';
  return undefined;
}

/** A domain in lower-case ASCII: as it is when printable ASCII, else its IDNA form ('' when it has none). */
export function asciiDomain(domain: string): string {
  return /^[\x21-\x7e]+$/.test(domain) ? domain.toLowerCase() : domainToASCII(domain);
}

/** Domain → lower-case ASCII (IDNA), or an error. Address literals are refused: transactional mail goes to names. */
export function normaliseDomain(domain: string): Parsed<string> {
  if (domain.length === 0) return { ok: false, error: 'the domain is empty' };
  if (domain.startsWith('[')) return { ok: false, error: 'address literals are not accepted' };
  const ascii = asciiDomain(domain);
  if (!ascii) return { ok: false, error: 'the domain is not a valid internationalised domain name' };
  if (ascii.length > 253) return { ok: false, error: 'the domain is longer than 253 characters' };
  const labels = ascii.split('.');
  if (labels.length < 2) return { ok: false, error: 'the domain needs at least two labels' };
  if (!labels.every((l) => LABEL.test(l))) return { ok: false, error: 'the domain has an invalid label' };
  if (/^\d+$/.test(labels[labels.length - 1]!)) return { ok: false, error: 'the top-level domain is numeric' };
  return { ok: true, value: ascii };
}

/** RFC 5322 addr-spec (no comments, no obsolete forms), IDN domains allowed. */
export function parseAddrSpec(input: string): Parsed<Mailbox> {
  if (hasControl(input)) return { ok: false, error: CONTROL_PROBLEM };
  const at = input.lastIndexOf('@');
  if (at <= 0) return { ok: false, error: 'is not an email address (missing @)' };
  const local = input.slice(0, at);
  const localErr = checkLocal(local);
  if (localErr) return { ok: false, error: localErr };
  const domain = normaliseDomain(input.slice(at + 1));
  if (!domain.ok) return domain;
  if (Buffer.byteLength(local) + 1 + domain.value.length > 254) return { ok: false, error: 'the address is too long' };
  return { ok: true, value: { address: `${local}@${domain.value}`, local, domain: domain.value } };
}

/**
 * `address` or `Display Name <address>` (the display name may be a quoted-string). Bounded in
 * length before anything else, and parsed with index searches, not a backtracking pattern.
 */
export function parseMailbox(input: string): Parsed<Mailbox> {
  if (input.length > MAILBOX_MAX_LENGTH) return { ok: false, error: `is longer than ${MAILBOX_MAX_LENGTH} characters` };
  if (hasControl(input)) return { ok: false, error: CONTROL_PROBLEM };
  const s = input.trim();
  // The address is the last <...> at the very end; everything before it is the display name.
  const open = s.endsWith('>') ? s.lastIndexOf('<') : -1;
  const inner = s.slice(open + 1, -1);
  if (open === -1 || inner.includes('>')) return parseAddrSpec(s);
  let name = s.slice(0, open).trim();
  if (name.startsWith('"')) {
    if (!/^"(?:[^"\\]|\\.)*"$/.test(name)) return { ok: false, error: 'the display name has an unbalanced quote' };
    name = name.slice(1, -1).replace(/\\(.)/g, '$1');
  } else if (/["<>]/.test(name)) return { ok: false, error: 'the display name must be quoted' };
  if (name.length > DISPLAY_NAME_MAX_LENGTH)
    return { ok: false, error: `the display name is longer than ${DISPLAY_NAME_MAX_LENGTH} characters` };
  const fold = foldProblem(NAME_PREFIX, name);
  if (fold) return { ok: false, error: `the display name ${fold}` };
  const addr = parseAddrSpec(inner.trim());
  if (!addr.ok) return addr;
  return { ok: true, value: name ? { ...addr.value, name } : addr.value };
}

/** Splits a comma-separated list, ignoring commas inside quotes or angle brackets. */
export function splitAddressList(input: string): string[] {
  // Most lists are one address: nothing to split.
  if (input.indexOf(',') === -1) {
    const one = input.trim();
    return one.length > 0 ? [one] : [];
  }
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  let angle = false;
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    if (c === '\\' && quoted) {
      cur += c + (input[++i] ?? '');
      continue;
    }
    if (c === '"') quoted = !quoted;
    else if (!quoted && c === '<') angle = true;
    else if (!quoted && c === '>') angle = false;
    if (c === ',' && !quoted && !angle) {
      out.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  out.push(cur.trim());
  return out.filter((x) => x.length > 0);
}

/** Key for case-insensitive comparison (suppressions, de-duplication). */
export function addressKey(address: string): string {
  return address.toLowerCase();
}

/**
 * The suppression list's entries that refuse an address: the address itself and its whole domain
 * (an entry `@example.com` refuses every address at example.com, not at its subdomains). Every
 * check of the list (the accept's commit, submission's RCPT TO, delivery) looks up these.
 */
export function suppressionKeys(address: string): string[] {
  const key = addressKey(address);
  const at = key.lastIndexOf('@');
  return at > 0 ? [key, key.slice(at)] : [key];
}

/**
 * Each address's reason (keyed by addressKey), from the list's entries found for its
 * suppressionKeys: its own entry first, else its domain's.
 */
export function suppressedBy<R extends string>(
  keys: string[][],
  rows: Array<{ address: string; reason: R }>,
): Map<string, R> {
  const found = new Map(rows.map((r) => [r.address, r.reason]));
  const out = new Map<string, R>();
  for (const k of keys) {
    const reason = k.map((x) => found.get(x)).find((r) => r !== undefined);
    if (reason) out.set(k[0]!, reason);
  }
  return out;
}

/**
 * A suppression entry as given (API, CLI, an imported file, the dashboard): an address, or a
 * whole domain written `@example.com`; its key on the list (lower-cased), or why it is refused.
 */
export function parseSuppressionEntry(input: string): Parsed<string> {
  const text = input.trim();
  if (text.startsWith('@')) {
    // The domain judged as an address's domain would be.
    const p = parseAddrSpec(`postmaster${text}`);
    return p.ok ? { ok: true, value: `@${p.value.domain}`.toLowerCase() } : { ok: false, error: p.error };
  }
  const p = parseAddrSpec(text);
  return p.ok ? { ok: true, value: addressKey(p.value.address) } : p;
}

/** Whether a suppression entry is a whole domain (`@example.com`). */
export const isDomainSuppression = (entry: string): boolean => entry.startsWith('@');

/** "Name <addr>", as events show senders. */
export function formatMailbox(m: Mailbox): string {
  return m.name ? `${m.name} <${m.address}>` : m.address;
}
