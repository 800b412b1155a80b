import {
  reasonOf,
  resultTypeOf,
  stsPolicyStrings,
  type TlsCount,
  type TlsFailure,
  type TlsPolicyRef,
  type TlsResultType,
  type TlsSession,
  utcDay,
} from '../../domain/tls-report.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { Store } from '../../store/store.js';
import type { SmtpSession } from '../smtp/session.js';
import type { DanePolicy } from './dane.js';
import type { StsState } from './mta-sts.js';

// What each connection to an MX host came to under its TLS policy, counted for the day's TLS
// reports (RFC 8460; docs/delivery.md, "TLS reports (RFC 8460)"). Counted in memory on the
// delivery path and added to the store's counters every few seconds, in one transaction per flush.

/** The TLS policy one MX host of a domain is delivered to under: its TLSA records, else the domain's MTA-STS policy. */
export function hostPolicy(domain: string, host: string, sts: StsState | undefined, dane?: DanePolicy): TlsPolicyRef {
  if (dane?.kind === 'dane' || dane?.kind === 'encrypt' || dane?.kind === 'temporary')
    return {
      type: 'tlsa',
      strings:
        dane.kind === 'dane'
          ? dane.records.map((r) => `${r.usage} ${r.selector} ${r.matchingType} ${r.data.toString('hex')}`)
          : [],
      domain,
      mx: [host],
    };
  const p = sts?.policy;
  if (p && p.mode !== 'none') return { type: 'sts', strings: stsPolicyStrings(p), domain, mx: p.mx };
  if (sts?.failure) return { type: 'sts', strings: [], domain, mx: [] };
  return { type: 'no-policy-found', strings: [], domain, mx: [] };
}

/** A failure at `host` [`address`], from `from`. */
export function failure(
  resultType: TlsResultType,
  where: { from: string; host: string; address: string },
  reason: string,
): TlsFailure {
  return {
    resultType,
    sendingIp: where.from,
    receivingMx: where.host,
    receivingIp: where.address,
    reason: reasonOf(reason),
  };
}

/**
 * An opened session's TLS: negotiated (a success; under a policy that could not be had, the
 * policy's failure), or plain text after a failed handshake or without STARTTLS offered.
 */
export function openedSession(policy: TlsPolicyRef, session: SmtpSession, sts?: StsState): TlsSession {
  const where = { from: session.localAddress, host: session.mx, address: session.via.address };
  if (policy.type === 'sts' && sts?.failure)
    return { policy, failure: failure(sts.failure.kind, where, sts.failure.message) };
  const audit = policy.type === 'sts' ? session.auditError : null;
  if (session.secure && audit)
    return { policy, failure: failure(resultTypeOf(audit), where, `certificate not accepted: ${audit}`) };
  if (session.secure) return { policy, failure: null };
  const fallback = session.tlsFallback;
  return fallback
    ? { policy, failure: failure(resultTypeOf(fallback.message), where, fallback.message) }
    : { policy, failure: failure('starttls-not-supported', where, 'the server does not offer STARTTLS') };
}

/** A connection that failed on its TLS (the client's ETLS). */
export function failedSession(
  policy: TlsPolicyRef,
  e: Error & { localAddress?: string },
  host: string,
  address: string,
): TlsSession {
  return {
    policy,
    failure: failure(resultTypeOf(e.message), { from: e.localAddress ?? '', host, address }, e.message),
  };
}

/**
 * The sessions of the current UTC day, summed in memory by policy and failure, added to the store
 * by `flush` (every `intervalMs` once started, and at stop). What a crash loses is at most one
 * interval's counts; a flush that fails keeps its counts for the next.
 */
export class TlsSessionLog {
  private pending = new Map<string, TlsCount>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly store: Pick<Store, 'tlsReports'>,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  record(s: TlsSession): void {
    const day = utcDay(this.clock.now());
    const key = `${day}\n${JSON.stringify(s.policy)}\n${JSON.stringify(s.failure)}`;
    const hit = this.pending.get(key);
    if (hit) hit.sessions++;
    else this.pending.set(key, { day, policy: s.policy, failure: s.failure, sessions: 1 });
  }

  /** Adds what was counted to the store; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const taken = this.pending;
    this.pending = new Map();
    try {
      await this.store.tlsReports.add([...taken.values()]);
    } catch (e) {
      for (const [key, c] of taken) {
        const hit = this.pending.get(key);
        if (hit) hit.sessions += c.sessions;
        else this.pending.set(key, c);
      }
      this.log.warn({ err: e }, 'TLS report counters not written; kept for the next try');
    }
  }
}
