import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { dmarc } from 'mailauth/lib/dmarc/index.js';
import { spf } from 'mailauth/lib/spf/index.js';
import {
  type AddressObject,
  type AttachmentStream,
  type Headers,
  MailParser,
  type MailParserOptions,
  type MessageText,
} from 'mailparser';
import { MAX_MIME_PARTS, MIME_LIMITS, mimeLimitProblem, parserInput, tooComplex } from '../mime/limits.js';
import type { StoredInbound } from '../store/model.js';

/** What a received message is described by (the stored row's parsed fields). */
export type ParsedInbound = Pick<StoredInbound, 'fromHeader' | 'to' | 'subject' | 'messageId' | 'attachments' | 'auth'>;

/** A message to a receiving domain is stored only if it parses within MIME_LIMITS, so the API can always show it. */
export type Inspection = { ok: true; parsed: ParsedInbound } | { ok: false; problem: string };

/** Reads what `email.received` reports, and checks SPF, DKIM and DMARC through `dns.servers`. */
export async function inspectInbound(
  raw: Buffer,
  env: { remoteIp: string; helo: string; mailFrom: string; hostname: string },
  resolver: Resolver,
): Promise<Inspection> {
  if (tooComplex(raw)) return { ok: false, problem: `more than ${MAX_MIME_PARTS} MIME parts` };
  const [described, auth] = await Promise.all([describe(raw), checkAuth(raw, env, resolver).catch(() => null)]);
  if ('failed' in described)
    return { ok: false, problem: mimeLimitProblem(described.failed) ?? 'MIME that cannot be parsed' };
  return { ok: true, parsed: { ...described, auth: authOf(auth) } };
}

type Description = Omit<ParsedInbound, 'auth'>;

/**
 * The message's headers and attachment count, read with mailparser as a stream within
 * MIME_LIMITS (the same parse the API's view makes). Attachment contents are read and let go as
 * they pass, not collected: receiving a large message never holds its attachments decoded.
 */
function describe(raw: Buffer): Promise<Description | { failed: unknown }> {
  return new Promise((resolve) => {
    const parser = new MailParser({ ...MIME_LIMITS, skipHtmlToText: true, skipTextLinks: true } as MailParserOptions);
    let headers: Headers | undefined;
    let attachments = 0;
    let settled = false;
    const settle = (v: Description | { failed: unknown }) => {
      if (!settled) resolve(v);
      settled = true;
    };
    parser.on('headers', (h: Headers) => (headers = h));
    parser.on('data', (d: AttachmentStream | MessageText) => {
      if (d.type !== 'attachment') return;
      attachments++;
      const content = d.content as Readable;
      content.on('end', () => d.release());
      content.resume();
    });
    parser.on('error', (e: unknown) => {
      settle({ failed: e });
      parser.destroy();
    });
    parser.on('end', () => {
      const addresses = headers?.get('to') as AddressObject | AddressObject[] | undefined;
      const to = addresses
        ? (Array.isArray(addresses) ? addresses : [addresses])
            .flatMap((a) => a.value.map((v) => v.address ?? ''))
            .filter(Boolean)
        : [];
      const text = (key: string) => {
        const v = headers?.get(key);
        return typeof v === 'string' ? v : '';
      };
      settle({
        fromHeader: (headers?.get('from') as AddressObject | undefined)?.text ?? '',
        to,
        subject: text('subject'),
        messageId: text('message-id'),
        attachments,
      });
    });
    const input = parserInput(raw);
    if (Buffer.isBuffer(input)) parser.end(input);
    else input.pipe(parser);
  });
}

type AuthShape = { spf: string; dkim: string; dmarc: string } | null;

/**
 * SPF, DKIM and DMARC with mailauth's checks, called one by one as its `authenticate` does, but
 * without loading its ARC and BIMI code (BIMI's certificate and SVG libraries alone add about
 * 5 MB of heap and 11 MB of resident memory to the daemon, for a check posthaste never runs).
 */
async function checkAuth(
  raw: Buffer,
  env: { remoteIp: string; helo: string; mailFrom: string; hostname: string },
  resolver: Resolver,
): Promise<NonNullable<AuthShape>> {
  const resolve = (name: string, rr: string) => resolver.resolve(name, rr as 'TXT');
  const dkim = await dkimVerify(raw, { resolver: resolve, sender: env.mailFrom });
  const helo = env.helo || env.remoteIp;
  const spfResult = await spf({
    ip: env.remoteIp,
    helo: isIP(helo) ? `[${helo}]` : helo,
    sender: env.mailFrom,
    mta: env.hostname,
    resolver: resolve,
  });
  const spfPass = spfResult?.status?.result === 'pass' && spfResult.domain ? [spfResult.domain] : [];
  const passed = (dkim.results ?? []).filter((r) => r.status?.result === 'pass');
  const dmarcResult = dkim.headerFrom
    ? await dmarc({
        headerFrom: dkim.headerFrom,
        spfDomains: spfPass,
        dkimDomains: passed.map((r) => ({
          id: r.id,
          domain: r.signingDomain ?? '',
          aligned: r.status?.aligned,
          underSized: r.status?.underSized,
        })),
        resolver: resolve,
      })
    : false;
  return {
    spf: spfResult?.status?.result || 'none',
    dkim: dkim.results?.[0]?.status?.result ?? 'none',
    dmarc: (dmarcResult ? dmarcResult.status?.result : undefined) || 'none',
  };
}

function authOf(a: AuthShape): ParsedInbound['auth'] {
  return { spf: a?.spf ?? 'none', dkim: a?.dkim ?? 'none', dmarc: a?.dmarc ?? 'none' };
}
