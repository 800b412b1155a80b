import { Agent } from 'undici';
import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { rootCertificates } from 'node:tls';
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

/**
 * The connect-time lookup: resolves through `dns.servers` and refuses unless every address is
 * public. Because it runs when the socket is opened, a name that resolved to a public address
 * when the endpoint was created and to 127.0.0.1 now (DNS rebinding) is still refused.
 */
function guardedLookup(resolver: Resolver, allowPrivate: boolean): LookupFunction {
  return ((hostname: string, options: { all?: boolean; family?: number }, callback: (...args: unknown[]) => void) => {
    (async () => {
      if (!allowPrivate && isLocalName(hostname)) throw new RefusedTarget(`${hostname} is a local name`);
      const [v4, v6] = await Promise.all([resolver.resolve4(hostname).catch(() => [] as string[]), resolver.resolve6(hostname).catch(() => [] as string[])]);
      const all = [...v4.map((a) => ({ address: a, family: 4 })), ...v6.map((a) => ({ address: a, family: 6 }))];
      if (all.length === 0) throw Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' });
      if (!allowPrivate) {
        const bad = all.find((a) => !isPublicAddress(a.address));
        if (bad) throw new RefusedTarget(`${hostname} resolves to ${bad.address}, which is not a public address`);
      }
      return all;
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
  if (u.protocol !== 'https:' && !(allowPrivate && u.protocol === 'http:')) throw new RefusedTarget('the URL must be https');
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) throw new RefusedTarget(`${host} is not a public address`);
  if (!allowPrivate && isLocalName(host)) throw new RefusedTarget(`${host} is a local name`);
  return u;
}

/** Resolves a host now and says whether every address is public (used when an endpoint is created). */
export async function resolvesPublicOnly(resolver: Resolver, host: string): Promise<string | null> {
  const h = host.replace(/^\[|\]$/g, '');
  if (isIP(h)) return isPublicAddress(h) ? null : `${h} is not a public address`;
  if (isLocalName(h)) return `${h} is a local name`;
  const [v4, v6] = await Promise.all([resolver.resolve4(h).catch(() => [] as string[]), resolver.resolve6(h).catch(() => [] as string[])]);
  const all = [...v4, ...v6];
  if (all.length === 0) return `${h} does not resolve`;
  const bad = all.find((a) => !isPublicAddress(a));
  return bad ? `${h} resolves to ${bad}, which is not a public address` : null;
}

/** A URL's standing: why it is refused (null: allowed), and where to send when it is not. */
interface Target {
  refused: string | null;
  origin: string;
  path: string;
}

/** Raised inside the response handler to stop reading once the response cap is reached. */
class CapReached extends Error {}

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

  post(url: string, headers: Record<string, string>, body: Buffer): Promise<PostResult> {
    const started = performance.now();
    const done = (status: number | null, error: string | null, response: string | null): PostResult => ({
      status,
      error,
      response,
      durationMs: Math.round(performance.now() - started),
    });
    const target = this.target(url);
    if (target.refused !== null) return Promise.resolve(done(null, target.refused, null));
    // then(ok, fail) rather than an async function with try/await: one promise less per request.
    return this.dispatch(target, headers, body).then(
      ({ status, response }) => done(status, null, response),
      (e: unknown) => {
        const err = e as Error & { code?: string; cause?: Error & { code?: string } };
        const cause = err.cause ?? err;
        const msg =
          err.name === 'TimeoutError' || err.name === 'AbortError' || cause.code === 'UND_ERR_HEADERS_TIMEOUT' || cause.code === 'UND_ERR_BODY_TIMEOUT'
            ? `timeout after ${this.opts.timeoutMs} ms`
            : cause instanceof RefusedTarget || cause.code === 'EREFUSEDTARGET'
              ? `refused: ${cause.message}`
              : `${cause.code ?? 'error'}: ${cause.message}`;
        return done(null, msg, null);
      },
    );
  }


  /**
   * One request through undici's dispatcher API (no stream or async iterator per request: the
   * dispatcher's hot path). undici's dispatch does not follow redirects: a 3xx is just a status
   * (a failure). The status arrives with the headers, so headersTimeout is exactly "a 2xx within
   * the timeout"; the body is read up to the cap (then the request is aborted) within bodyTimeout.
   */
  private dispatch(target: Target, headers: Record<string, string>, body: Buffer): Promise<{ status: number; response: string }> {
    return new Promise((resolve, reject) => {
      let status = 0;
      let size = 0;
      const chunks: Buffer[] = [];
      const text = () => (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8', 0, RESPONSE_CAP);
      this.agent.dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers, body, headersTimeout: this.opts.timeoutMs, bodyTimeout: this.opts.timeoutMs },
        {
          onRequestStart: () => undefined, // marks the handler as undici 7's controller API
          onResponseStart: (_controller, statusCode) => {
            status = statusCode;
          },
          onResponseData: (controller, chunk) => {
            if (size < RESPONSE_CAP) chunks.push(chunk);
            size += chunk.length;
            if (size >= RESPONSE_CAP) controller.abort(new CapReached('response cap reached')); // read no further
          },
          onResponseEnd: () => resolve({ status, response: text() }),
          onResponseError: (_controller, err) => (err instanceof CapReached ? resolve({ status, response: text() }) : reject(err)),
        },
      );
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
