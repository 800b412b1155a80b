import type { Resolver } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
import { describeLookupFailure, lookupAddresses, lookupFailure } from '../lib/dns.js';
import { isLocalName, isPublicAddress } from './address-guard.js';

export interface SafeFetchOptions {
  resolver: Resolver;
  /** webhooks.allow_private_targets: no address checks, and http allowed. */
  allowPrivate: boolean;
  timeoutMs: number;
  /** Extra CAs trusted for https (private PKI, tests). */
  extraCa: string[];
}

export interface PostResult {
  status: number | null;
  error: string | null;
  durationMs: number;
  /** The first 1 KiB of the response body. */
  response: string | null;
}

export class RefusedTarget extends Error {
  readonly code = 'EREFUSEDTARGET';
}

const RESPONSE_CAP = 1024;

/** Said after every refusal the setting lifts, so the message names its fix. */
const allowedBy = (what: string) => `webhooks.allow_private_targets = true allows ${what} (development and tests only)`;
const PRIVATE_TARGETS_HINT = allowedBy('it');

/** Certificate errors that trusting the receiver's CA (or its self-signed certificate) fixes. */
const UNTRUSTED_CERT = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);

/**
 * Why a host's addresses cannot be used, in words that name the fix: a private address (the
 * setting that allows it), a name that does not exist, or a DNS server that did not answer
 * (dns.servers); null when it resolves, to public addresses only unless `allowPrivate`.
 */
async function unusableHost(
  resolver: Resolver,
  host: string,
  allowPrivate: boolean,
): Promise<{ problem: string; refused: boolean } | { addresses: Array<{ address: string; family: 4 | 6 }> }> {
  const { addresses, errors } = await lookupAddresses(resolver, host);
  if (addresses.length === 0) {
    const failed = errors.find((code) => code !== null && lookupFailure(code) === 'no_answer');
    if (failed) return { problem: describeLookupFailure(resolver, host, 'A/AAAA', failed), refused: false };
    return {
      problem: errors.every((code) => code === 'ENOTFOUND')
        ? `${host} does not exist (NXDOMAIN)`
        : `${host} has no A or AAAA record`,
      refused: false,
    };
  }
  const bad = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
  if (bad)
    return {
      problem: `${host} resolves to ${bad.address}, which is not a public address; ${PRIVATE_TARGETS_HINT}`,
      refused: true,
    };
  return { addresses: addresses.map(({ address, family }) => ({ address, family })) };
}

/**
 * The connect-time lookup: resolves through `dns.servers` and refuses unless every address is
 * public. Because it runs when the socket is opened, a name that resolved to a public address
 * when the endpoint was created and to 127.0.0.1 now (DNS rebinding) is still refused.
 */
function guardedLookup(resolver: Resolver, allowPrivate: boolean): LookupFunction {
  return ((hostname: string, options: { all?: boolean; family?: number }, callback: (...args: unknown[]) => void) => {
    (async () => {
      if (!allowPrivate && isLocalName(hostname))
        throw new RefusedTarget(`${hostname} is a local name; ${PRIVATE_TARGETS_HINT}`);
      const found = await unusableHost(resolver, hostname, allowPrivate);
      if ('addresses' in found) return found.addresses;
      throw found.refused
        ? new RefusedTarget(found.problem)
        : Object.assign(new Error(found.problem), { code: 'ENOTFOUND' });
    })().then(
      (all) => (options?.all ? callback(null, all) : callback(null, all[0]!.address, all[0]!.family)),
      (e: unknown) => callback(e),
    );
  }) as unknown as LookupFunction;
}

/** Checks a URL before anything connects: scheme, and literal addresses (the lookup never sees those). */
export function checkTarget(url: string, allowPrivate: boolean): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RefusedTarget('not a valid URL');
  }
  if (u.username || u.password) throw new RefusedTarget('credentials in the URL are not allowed');
  if (u.protocol === 'http:' && !allowPrivate)
    throw new RefusedTarget(`the URL must be https; ${allowedBy('plain http')}`);
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new RefusedTarget('the URL must be https');
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && isIP(host) && !isPublicAddress(host))
    throw new RefusedTarget(`${host} is not a public address; ${PRIVATE_TARGETS_HINT}`);
  if (!allowPrivate && isLocalName(host)) throw new RefusedTarget(`${host} is a local name; ${PRIVATE_TARGETS_HINT}`);
  return u;
}

/** Resolves a host now and says why it cannot be sent to (used when an endpoint is created): null when every address is public. */
export async function resolvesPublicOnly(resolver: Resolver, host: string): Promise<string | null> {
  const h = host.replace(/^\[|\]$/g, '');
  if (isIP(h)) return isPublicAddress(h) ? null : `${h} is not a public address; ${PRIVATE_TARGETS_HINT}`;
  if (isLocalName(h)) return `${h} is a local name; ${PRIVATE_TARGETS_HINT}`;
  const found = await unusableHost(resolver, h, false);
  return 'problem' in found ? found.problem : null;
}

/** A URL's standing: why it is refused (null: allowed), and where to send when it is not. */
interface Target {
  refused: string | null;
  origin: string;
  path: string;
}

/** Raised inside the response handler to stop reading once the response cap is reached. */
class CapReached extends Error {}

/** What an error of a request says in the attempt log. */
function describeError(e: unknown, timeoutMs: number): string {
  const err = e as Error & { code?: string; cause?: Error & { code?: string } };
  const cause = err.cause ?? err;
  if (
    err.name === 'TimeoutError' ||
    err.name === 'AbortError' ||
    cause.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    cause.code === 'UND_ERR_BODY_TIMEOUT'
  )
    return `timeout after ${timeoutMs} ms`;
  if (cause instanceof RefusedTarget || cause.code === 'EREFUSEDTARGET') return `refused: ${cause.message}`;
  if (cause.code !== undefined && UNTRUSTED_CERT.has(cause.code))
    return `${cause.code}: ${cause.message}: the receiver's certificate is not signed by a CA posthaste trusts; put its CA (or the self-signed certificate) in a PEM file named by webhooks.tls_ca_file`;
  if (cause.code === 'ENOTFOUND') return cause.message;
  return `${cause.code ?? 'error'}: ${cause.message}`;
}

/**
 * One POST's handler, on the interface undici 7's clients call natively (onConnect, onHeaders,
 * onData, onComplete, onError; its own request() uses it too). The newer controller interface
 * is, in undici 7, a wrapper around this one that allocates two more objects and parses the
 * response headers and trailers into objects per request, none of which a webhook needs.
 *
 * undici's dispatch does not follow redirects: a 3xx is just a status (a failure). The status
 * arrives with the headers, so headersTimeout is exactly "an answer within the timeout"; the body
 * is read up to the cap (then the request is aborted) within bodyTimeout.
 */
class PostHandler implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private status = 0;
  private size = 0;
  private chunks: Buffer[] = [];
  private abort: ((err?: Error) => void) | null = null;

  constructor(
    private readonly resolve: (r: PostResult) => void,
    private readonly timeoutMs: number,
  ) {}

  private settle(status: number | null, error: string | null): void {
    const { chunks } = this;
    const response =
      status === null
        ? null
        : (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8', 0, RESPONSE_CAP);
    this.resolve({ status, error, response, durationMs: Math.round(performance.now() - this.started) });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
  }

  onHeaders(statusCode: number): boolean {
    this.status = statusCode;
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.size < RESPONSE_CAP) this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size >= RESPONSE_CAP) this.abort?.(new CapReached('response cap reached')); // read no further
    return true;
  }

  onComplete(): void {
    this.settle(this.status, null);
  }

  onError(err: Error): void {
    if (err instanceof CapReached) this.settle(this.status, null);
    else this.settle(null, describeError(err, this.timeoutMs));
  }
}

/** POSTs webhook bodies: no redirects, a hard timeout, the response read up to 1 KiB, the address guard at connect time. */
export class SafeFetch {
  private readonly agent: Agent;
  /** URL → its standing; the scheme and literal-address checks depend only on the URL. */
  private readonly targets = new Map<string, Target>();

  constructor(private readonly opts: SafeFetchOptions) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup(opts.resolver, opts.allowPrivate), ca: [...rootCertificates, ...opts.extraCa] },
      connections: 64,
      keepAliveTimeout: 10_000,
    });
  }

  private target(url: string): Target {
    let t = this.targets.get(url);
    if (t === undefined) {
      try {
        const u = checkTarget(url, this.opts.allowPrivate);
        t = { refused: null, origin: u.origin, path: u.pathname + u.search };
      } catch (e) {
        t = { refused: (e as Error).message, origin: '', path: '' };
      }
      if (this.targets.size > 10_000) this.targets.clear();
      this.targets.set(url, t);
    }
    return t;
  }

  /**
   * POSTs `body` with `headers` (a flat name, value, ... list, as undici takes them) and settles
   * with the outcome; never rejects.
   */
  post(url: string, headers: string[], body: Buffer): Promise<PostResult> {
    const target = this.target(url);
    if (target.refused !== null)
      return Promise.resolve({ status: null, error: target.refused, response: null, durationMs: 0 });
    return new Promise((resolve) => {
      this.agent.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers,
          body,
          headersTimeout: this.opts.timeoutMs,
          bodyTimeout: this.opts.timeoutMs,
        },
        new PostHandler(resolve, this.opts.timeoutMs),
      );
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
