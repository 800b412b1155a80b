import { getDomain } from 'tldts';
import { dkimValue, zoneTxt } from './dns-records.js';
import { type DoctorCheck, type Lookup, noAnswer } from './doctor.js';

/**
 * The doctor's checks of one sending or receiving domain (docs/operations.md, "Deliverability"),
 * judged from the answers given: its DKIM key, the SPF record at its return path as a receiver
 * evaluates it, its DMARC record and the alignment under it, the MX records. Pure.
 */

const bare = (n: string) => n.toLowerCase().replace(/\.$/, '');

/** A record's tags (DKIM, DMARC: `k=v; k=v`), keys lower case. */
export function recordTags(text: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of text.split(';')) {
    const at = part.indexOf('=');
    if (at > 0) tags.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim());
  }
  return tags;
}

const DKIM_KEY_WORDS = {
  dkim: 'the key posthaste signs with',
  dkim_next: 'the next key of the rotation (signing switches to it once it is found)',
  dkim_previous:
    'the previous key of the rotation (mail signed before the switch is still checked against it until the grace ends)',
} as const;

/**
 * The DKIM record at `selector._domainkey.domain` holds the key signing, the next key of a
 * rotation, or the key it replaced while the grace after a switch lasts.
 */
export function judgeDkim(
  check: keyof typeof DKIM_KEY_WORDS,
  domain: string,
  selector: string,
  publicKey: string,
  answer: Lookup<string[]>,
): DoctorCheck {
  const name = `${selector}._domainkey.${domain}`;
  const c = { check, domain, subject: name };
  const publish = `publish the TXT record ${name} with the value ${zoneTxt(dkimValue(publicKey))}`;
  const which = DKIM_KEY_WORDS[check];
  if (answer.kind === 'no_answer') return noAnswer(c, answer.why);
  const keys = answer.kind === 'answered' ? answer.records.map((t) => recordTags(t).get('p')?.replace(/\s+/g, '')) : [];
  if (keys.includes(publicKey.replace(/\s+/g, '')))
    return { ...c, state: 'pass', found: `${name} holds ${which}`, fix: null };
  return {
    ...c,
    state: 'fail',
    found: keys.length
      ? `${name} holds another key than ${which} (an old key?): receivers find the signature broken`
      : `${name} has no DKIM record: receivers cannot check ${which}`,
    fix: keys.length ? `${publish}, in place of the record there` : publish,
  };
}

/** What a receiver's SPF evaluation (RFC 7208) said for one source address. */
export interface SpfVerdict {
  address: string;
  /** pass, fail, softfail, neutral, none, permerror, temperror. */
  result: string;
  /** The evaluator's words (the permerror's reason). */
  text: string;
  /** DNS lookups the evaluation took (the limit is 10). */
  lookups: number;
}

/**
 * SPF at the return path host, for every source address: a pass for each. A temperror is no
 * answer; a permerror (over ten lookups, over two void lookups, a broken record) fails them all.
 * `record` is an SPF record that would pass, to suggest.
 */
export function judgeSpf(domain: string, host: string, verdicts: SpfVerdict[], record: string): DoctorCheck {
  const c = { check: 'spf' as const, domain, subject: host };
  const perm = verdicts.find((v) => v.result === 'permerror');
  if (perm) return spfPermError(c, perm, record);
  const failing = verdicts.filter((v) => !['pass', 'temperror'].includes(v.result));
  if (failing.length === 0) {
    const temp = verdicts.find((v) => v.result === 'temperror');
    if (temp) return noAnswer(c, `SPF at ${host} could not be evaluated: ${temp.text}`);
    const most = Math.max(0, ...verdicts.map((v) => v.lookups));
    return {
      ...c,
      state: 'pass',
      found: `SPF at ${host} passes for ${verdicts.map((v) => v.address).join(', ')} (${most} of 10 DNS lookups)`,
      fix: null,
    };
  }
  if (failing.every((v) => v.result === 'none'))
    return {
      ...c,
      state: 'fail',
      found: `${host} has no SPF record`,
      fix: `publish the TXT record ${host} with the value "${record}"`,
    };
  const mechanisms = failing.map((v) => `${v.address.includes(':') ? 'ip6' : 'ip4'}:${v.address}`);
  return {
    ...c,
    state: 'fail',
    found: `SPF at ${host} does not cover ${failing.map((v) => `${v.address} (${v.result})`).join(', ')}`,
    fix: `add ${mechanisms.join(' ')} to the SPF record at ${host} (where its includes or its alias lead, if the record is there), or publish there "${record}"`,
  };
}

function spfPermError(
  c: Pick<DoctorCheck, 'check' | 'domain' | 'subject'>,
  v: SpfVerdict,
  record: string,
): DoctorCheck {
  const host = c.subject;
  const tooMany = /too many dns requests/i.test(v.text);
  const tooVoid = /void/i.test(v.text);
  return {
    ...c,
    state: 'fail',
    found: tooMany
      ? `SPF at ${host} takes more than 10 DNS lookups (include, a, mx, exists, redirect), so receivers treat it as an error (RFC 7208 4.6.4)`
      : tooVoid
        ? `SPF at ${host} looks up more than two names that do not exist, so receivers treat it as an error (RFC 7208 4.6.4)`
        : `SPF at ${host} is broken, so receivers treat it as an error: ${v.text}`,
    fix: tooMany
      ? `cut the lookups at ${host}: replace include: and a:/mx: mechanisms with the ip4:/ip6: addresses they stand for, or drop the includes of services that do not send as this return path; the record posthaste needs is "${record}"`
      : tooVoid
        ? `remove the mechanisms of the SPF record at ${host} that name hosts or includes that no longer exist; the record posthaste needs is "${record}"`
        : `publish a valid SPF record at ${host}, e.g. "${record}"`,
  };
}

/** A DMARC record as found: its text and where (the domain's own name or its organizational domain). */
export interface DmarcFound {
  name: string;
  texts: string[];
}

/** The DMARC record of a domain, and its policy. */
export function judgeDmarc(domain: string, answer: Lookup<DmarcFound>): DoctorCheck {
  const name = `_dmarc.${domain}`;
  const c = { check: 'dmarc' as const, domain, subject: name };
  if (answer.kind === 'no_answer') return noAnswer(c, answer.why);
  const publish = `publish the TXT record ${name} with the value "v=DMARC1; p=none" (p=none only watches; once its reports show all your mail passing, p=quarantine or p=reject protects the domain from forgery)`;
  if (answer.kind === 'none' || answer.records.texts.length === 0)
    return {
      ...c,
      state: 'fail',
      found: `${domain} has no DMARC record: receivers such as Gmail and Yahoo require one of bulk senders`,
      fix: publish,
    };
  const { texts, name: at } = answer.records;
  if (texts.length > 1)
    return {
      ...c,
      state: 'fail',
      found: `${at} holds ${texts.length} DMARC records, so receivers ignore them all`,
      fix: `keep one DMARC record at ${at}`,
    };
  const p = recordTags(texts[0]!).get('p')?.toLowerCase();
  if (!p || !['none', 'quarantine', 'reject'].includes(p))
    return { ...c, state: 'fail', found: `the DMARC record at ${at} has no valid policy (p=)`, fix: publish };
  const note =
    p === 'none'
      ? ': receivers take no action on mail that fails; move to p=quarantine once its reports show your mail passing'
      : '';
  return { ...c, state: 'pass', found: `DMARC at ${at}: p=${p}${note}`, fix: null };
}

/** Relaxed alignment: the two names share their organizational domain; strict: they are equal (RFC 7489 3.1). */
export function aligned(a: string, b: string, mode: 'r' | 's'): boolean {
  const x = bare(a);
  const y = bare(b);
  if (mode === 's') return x === y;
  const org = (n: string) => getDomain(n, { allowPrivateDomains: true }) ?? n;
  return org(x) === org(y);
}

/**
 * SPF and DKIM alignment under the domain's DMARC record (its adkim and aspf, relaxed when there
 * is none): the envelope sender's domain (the return path in use) and the DKIM d= (the domain
 * itself) against the From domain. SPF not aligning is a failure: DMARC then rests on DKIM alone.
 */
export function judgeAlignment(
  domain: string,
  envelopeDomain: string,
  returnPathHost: string,
  returnPathTarget: string,
  dmarc: string | null,
): DoctorCheck {
  const c = { check: 'alignment' as const, domain, subject: domain };
  const tags = dmarc ? recordTags(dmarc) : new Map<string, string>();
  const aspf = tags.get('aspf')?.toLowerCase() === 's' ? 's' : 'r';
  const adkim = tags.get('adkim')?.toLowerCase() === 's' ? 's' : 'r';
  const spf = aligned(envelopeDomain, domain, aspf);
  const dkim = aligned(domain, domain, adkim);
  const found = `SPF (envelope sender on ${envelopeDomain}, aspf=${aspf}) ${spf ? 'aligns' : 'does not align'}; DKIM (d=${domain}, adkim=${adkim}) ${dkim ? 'aligns' : 'does not align'}`;
  if (spf && dkim) return { ...c, state: 'pass', found, fix: null };
  const fix =
    bare(envelopeDomain) !== bare(returnPathHost)
      ? `publish the CNAME record ${returnPathHost} pointing to ${returnPathTarget}. (the return path on the domain), then run "posthaste domains verify ${domain}" so the envelope sender moves onto it`
      : `remove aspf=s from the DMARC record at _dmarc.${domain}: the envelope sender is on ${envelopeDomain}, which aligns only under relaxed alignment (the default)`;
  return { ...c, state: 'fail', found, fix };
}

/**
 * An MX check: the return path's (bounces must arrive; any MX will do), or a receiving domain's
 * (its mail must reach this server: an MX naming `expect`).
 */
export function judgeMx(
  check: 'return_path_mx' | 'mx',
  domain: string,
  host: string,
  answer: Lookup<Array<{ priority: number; exchange: string }>>,
  expect: string,
): DoctorCheck {
  const c = { check, domain, subject: host };
  if (answer.kind === 'no_answer') return noAnswer(c, answer.why);
  const mx = answer.kind === 'answered' ? answer.records.filter((m) => bare(m.exchange) !== '') : [];
  const publish = `publish the MX record ${host} with the value "10 ${expect}"`;
  const what =
    check === 'mx' ? 'mail to this domain does not reach posthaste' : 'bounces and complaints do not come back';
  if (mx.length === 0) return { ...c, state: 'fail', found: `${host} has no MX record: ${what}`, fix: publish };
  const seen = mx.map((m) => `${m.priority} ${bare(m.exchange)}`).join(', ');
  if (check === 'mx' && !mx.some((m) => bare(m.exchange) === bare(expect)))
    return { ...c, state: 'fail', found: `the MX of ${host} is ${seen}, not ${expect}: ${what}`, fix: publish };
  return { ...c, state: 'pass', found: `MX of ${host}: ${seen}`, fix: null };
}
