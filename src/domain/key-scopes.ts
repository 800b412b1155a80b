import { BlockList, isIP } from 'node:net';
import { domainToASCII } from 'node:url';

/**
 * What an API key may do (docs/api.md, "Keys and scopes"): its scopes, and the restrictions on
 * where it is used from and which From domains it sends as. Pure rules, shared by the API, SMTP
 * submission, the CLI and the dashboard.
 */
export const SCOPES = [
  'send',
  'emails:read',
  'inbound:read',
  'webhooks:write',
  'suppressions:write',
  'domains:write',
  'keys:write',
] as const;
export type Scope = (typeof SCOPES)[number];

/** The presets a key is created with: `full` (every scope) or `send` (sending only). */
export const SCOPE_PRESETS: Readonly<Record<'full' | 'send', readonly Scope[]>> = { full: SCOPES, send: ['send'] };

/** What a key carries besides its identity: scopes, and null for a restriction it does not have. */
export interface KeyGrant {
  scopes: Scope[];
  /** The From domains it may send as (ASCII, lower case); null: any of its customer's. */
  from_domains: string[] | null;
  /** The client addresses it may be used from (CIDR); null: any. */
  allowed_cidrs: string[] | null;
}

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

/** Scopes as stored: space-separated, in SCOPES order. */
export function scopesText(scopes: readonly Scope[]): string {
  return SCOPES.filter((s) => scopes.includes(s)).join(' ');
}

/** A stored scopes text read back (an unknown word, from a newer version, is dropped: never a scope granted by mistake). */
export function scopesOf(text: string): Scope[] {
  return text.split(' ').filter(isScope);
}

/** A stored restriction (space-separated, or null) read back. */
export function restrictionOf(text: string | null): string[] | null {
  return text === null || text === '' ? null : text.split(' ');
}

export const hasScope = (grant: Pick<KeyGrant, 'scopes'>, scope: Scope): boolean => grant.scopes.includes(scope);

/**
 * Requested scope names (presets `full` and `send` included) as the scopes they stand for, or the
 * problem with them: none given, or a word that is no scope.
 */
export function parseScopes(words: readonly string[]): Scope[] | string {
  if (words.length === 0) return `choose the key's scopes: full, send, or some of ${SCOPES.join(', ')}`;
  const out = new Set<Scope>();
  for (const w of words) {
    if (w === 'full') for (const s of SCOPES) out.add(s);
    else if (isScope(w)) out.add(w);
    else return `"${w}" is not a scope; the scopes are ${SCOPES.join(', ')} (or the presets full and send)`;
  }
  return SCOPES.filter((s) => out.has(s));
}

/** A From domain list: each a domain name, made ASCII and lower case; or the problem with one. */
export function parseFromDomains(words: readonly string[]): string[] | string {
  const out: string[] = [];
  for (const w of words) {
    const ascii = domainToASCII(w.trim().replace(/\.$/, '')).toLowerCase();
    if (!ascii.includes('.')) return `"${w}" is not a domain name`;
    if (!out.includes(ascii)) out.push(ascii);
  }
  return out;
}

/** A CIDR list (an address alone is its own /32 or /128), made canonical; or the problem with one. */
export function parseCidrs(words: readonly string[]): string[] | string {
  const out: string[] = [];
  for (const w of words) {
    const c = cidrOf(w.trim());
    if (!c) return `"${w}" is not an IP address or CIDR block (e.g. 203.0.113.0/24, 2001:db8::/32)`;
    const text = `${c.address}/${c.prefix}`;
    if (!out.includes(text)) out.push(text);
  }
  return out;
}

function cidrOf(text: string): { address: string; prefix: number; family: 4 | 6 } | undefined {
  const [address = '', prefixText, extra] = text.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return undefined;
  return { address: address.toLowerCase(), prefix, family: family as 4 | 6 };
}

/** An IPv4 address a dual-stack socket reports as IPv4-mapped IPv6 (::ffff:192.0.2.1), as its IPv4 form. */
export function plainAddress(address: string): string {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address) ? address.slice(7) : address;
}

function blockList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const text of cidrs) {
    const c = cidrOf(text);
    if (c) list.addSubnet(c.address, c.prefix, c.family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** Whether a client address is one the CIDR list allows (null: no restriction). */
export function addressAllowed(cidrs: readonly string[] | null, address: string): boolean {
  if (cidrs === null) return true;
  const a = plainAddress(address);
  const family = isIP(a);
  if (family === 0) return false;
  return blockList(cidrs).check(a, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether every block of `inner` lies inside one of `outer` (null: everywhere). */
export function cidrsWithin(inner: readonly string[] | null, outer: readonly string[] | null): boolean {
  if (outer === null) return true;
  if (inner === null) return false;
  return inner.every((text) => {
    const c = cidrOf(text)!;
    return outer.some((o) => {
      const p = cidrOf(o)!;
      return p.family === c.family && c.prefix >= p.prefix && addressAllowed([o], c.address);
    });
  });
}

/** Whether a key may send with this From domain (null: any of its customer's verified domains). */
export const fromDomainAllowed = (grant: Pick<KeyGrant, 'from_domains'>, domain: string): boolean =>
  grant.from_domains === null || grant.from_domains.includes(domain.toLowerCase());

/**
 * What a key asking for a new key may give it: scopes it has, and restrictions no wider than its
 * own. The problems, by field, or none.
 */
export function escalation(creator: KeyGrant, wanted: KeyGrant): Record<string, string> {
  const problems: Record<string, string> = {};
  const missing = wanted.scopes.filter((s) => !creator.scopes.includes(s));
  if (missing.length) problems.scopes = `this key does not have ${missing.join(', ')}: a key cannot give what it lacks`;
  if (creator.from_domains !== null) {
    const wider = wanted.from_domains === null || wanted.from_domains.some((d) => !creator.from_domains!.includes(d));
    if (wider)
      problems.from_domains = `must be within this key's own from_domains (${creator.from_domains.join(', ')})`;
  }
  if (!cidrsWithin(wanted.allowed_cidrs, creator.allowed_cidrs))
    problems.allowed_cidrs = `must be within this key's own allowed_cidrs (${creator.allowed_cidrs!.join(', ')})`;
  return problems;
}

/** Every scope and no restriction: the `full` preset, what keys made before scopes have. */
export const fullGrant = (): KeyGrant => ({ scopes: [...SCOPES], from_domains: null, allowed_cidrs: null });

/** A key's grant as asked for (the API's body, the CLI's options, the dashboard's form): words, not yet checked. */
export interface GrantRequest {
  scopes: readonly string[];
  from_domains?: readonly string[] | null;
  allowed_cidrs?: readonly string[] | null;
}

/** The grant asked for, read by the same rules behind every door; or its problems by field. */
export function parseGrant(req: GrantRequest): { grant: KeyGrant } | { problems: Record<string, string> } {
  const problems: Record<string, string> = {};
  const scopes = parseScopes(req.scopes);
  if (typeof scopes === 'string') problems.scopes = scopes;
  const restriction = (field: 'from_domains' | 'allowed_cidrs', words: readonly string[] | null | undefined) => {
    if (words === undefined || words === null) return null;
    if (words.length === 0) {
      problems[field] = 'must list at least one entry (leave it out for no restriction)';
      return null;
    }
    const parsed = field === 'from_domains' ? parseFromDomains(words) : parseCidrs(words);
    if (typeof parsed === 'string') problems[field] = parsed;
    return typeof parsed === 'string' ? null : parsed;
  };
  const from_domains = restriction('from_domains', req.from_domains);
  const allowed_cidrs = restriction('allowed_cidrs', req.allowed_cidrs);
  if (Object.keys(problems).length > 0 || typeof scopes === 'string') return { problems };
  return { grant: { scopes, from_domains, allowed_cidrs } };
}
