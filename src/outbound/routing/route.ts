import type { Outcome } from '../../domain/outcome.js';
import { type Reply, reply } from '../../domain/outcome.js';
import type { Logger } from '../../lib/logger.js';
import { type RelayOptions, replyOf, type SmtpOptions, SmtpSession } from '../smtp/session.js';
import type { SourceNeed, SourcePicker } from '../source.js';
import type { Dane, DanePolicy } from './dane.js';
import { type MtaSts, mxMatches, type StsState } from './mta-sts.js';
import type { MxResolver } from './mx.js';
import { failedSession, failure, hostPolicy, openedSession, type TlsSessionLog } from './tls-sessions.js';

// Where a delivery group goes and the session it goes over (deliver.ts's first steps): the MX
// hosts narrowed by MTA-STS, or the relay host; each host's DANE policy; the hosts and their
// addresses tried in order until one answers.

/** What routing needs of the daemon (deliver.ts's DeliverDeps carries it). */
export interface RouteDeps {
  /** MTA-STS policies; undefined when outbound.mta_sts is off. */
  mtaSts?: MtaSts;
  /** DANE policies (TLSA through a validating resolver); undefined when outbound.dane is off. */
  dane?: Dane;
  mx: MxResolver;
  smtp: SmtpOptions;
  /** outbound.relay: everything goes through this host instead of the recipients' MX hosts. */
  relay?: RelayOptions;
  /** outbound.pools: the source address of each connection; undefined without pools (the kernel picks). */
  sources?: SourcePicker;
  /** Each connection's TLS counted for the TLS reports (RFC 8460); undefined: not counted. */
  tlsLog?: TlsSessionLog;
  log: Logger;
}

/** Where a group goes: its hosts in order (MX hosts, or the relay host), how to speak to them. */
export interface Route {
  hosts: string[];
  smtp: SmtpOptions;
  /** The domain has no MX and is its own host (RFC 5321 5.1). */
  implicit: boolean;
  /** The domain's MTA-STS policy as looked up (direct delivery with outbound.mta_sts on). */
  sts?: StsState;
}

/**
 * Step: try each MX host (or the relay host) in order, each of its addresses in turn, until one
 * answers; under DANE, a host whose TLSA records could not be looked up is passed over, and one
 * with records is spoken to over TLS they authenticate. With pools (`need`), each connection
 * binds a source address of the pool in the address's family, and an address of a family the
 * pool lacks is passed over; a retry's address is kept unless no host has an address of its family.
 */
export async function connect(
  deps: RouteDeps,
  route: Route & { domain: string },
  need?: SourceNeed,
): Promise<{ session: SmtpSession } | { failure: Reply }> {
  const { relay } = deps;
  let failure: Reply = reply(451, '4.4.1', 'no MX host could be reached', 'connection_failure');
  let tried = 0;
  let skipped = 0;
  for (const host of route.hosts) {
    let addresses: string[];
    try {
      addresses = await deps.mx.addresses(host);
    } catch (e) {
      failure = reply(451, '4.4.3', `${host}: ${(e as Error).message}`, 'dns_failure');
      continue;
    }
    const dane = relay || !deps.dane ? undefined : await deps.dane.policy(route.domain, host, route.implicit);
    const smtp = dane ? daneOptions(deps.dane!, route, host, dane) : route.smtp;
    const policy = relay ? undefined : hostPolicy(route.domain, host, route.sts, dane);
    if ('failure' in smtp) {
      failure = smtp.failure;
      if (policy) deps.tlsLog?.record({ policy, failure: tlsFailure('dnssec-invalid', host, smtp.failure.message) });
      continue;
    }
    for (const address of addresses) {
      const source = need && deps.sources ? deps.sources.pick(need, address) : null;
      if (need && !source) {
        skipped++;
        continue;
      }
      tried++;
      const opts = source ? { ...smtp, source } : smtp;
      try {
        const session = relay
          ? await SmtpSession.openRelay(address, relay, opts)
          : await SmtpSession.open(host, address, opts);
        if (policy) deps.tlsLog?.record(openedSession(policy, session, route.sts));
        return { session };
      } catch (e) {
        if (policy && (e as { code?: string }).code === 'ETLS')
          deps.tlsLog?.record(failedSession(policy, e as Error, host, address));
        failure = replyOf(e as Error);
        failure = { ...failure, message: `${host} [${address}]: ${failure.message}` };
        deps.log.debug(
          { mx: host, address, code: failure.code, err: failure.message },
          'MX host failed; trying the next',
        );
      }
    }
  }
  if (need && tried === 0 && skipped > 0) {
    if (need.sticky !== null) return connect(deps, route, { ...need, sticky: null });
    const families = [...new Set(need.pool.addresses.map((a) => (a.ip.includes(':') ? 'IPv6' : 'IPv4')))];
    failure = reply(
      451,
      '4.4.4',
      `${route.domain}: no MX host has an address of the families pool "${need.pool.name}" sends from (${families.join(', ')})`,
      'connection_failure',
    );
  }
  return { failure };
}

/** The SMTP options for one MX host under its DANE policy; where there are TLSA records, DANE rather than MTA-STS decides how TLS is checked (RFC 8461 2). */
function daneOptions(dane: Dane, route: Route, host: string, policy: DanePolicy): SmtpOptions | { failure: Reply } {
  if (policy.kind === 'none') return route.smtp;
  if (policy.kind === 'temporary') return { failure: reply(451, '4.7.5', `${host}: ${policy.detail}`, 'dns_failure') };
  return { ...route.smtp, dane: { verify: policy.kind === 'dane' ? dane.verifier(policy.records, host) : null } };
}

/** A failure found before any connection (no source address, no receiving address). */
const tlsFailure = (type: Parameters<typeof failure>[0], host: string, reason: string) =>
  failure(type, { from: '', host, address: '' }, reason);

/**
 * Step: where a domain's mail goes when it goes direct: its MX hosts, narrowed by its MTA-STS
 * policy in enforce mode (only the hosts it names, only over valid TLS); or the outcome for all
 * of its recipients when there is nowhere to go.
 */
export async function directRoute(deps: RouteDeps, domain: string): Promise<Route | { outcome: Outcome }> {
  const mx = await deps.mx.resolve(domain);
  if (mx.kind !== 'hosts')
    return {
      outcome:
        mx.kind === 'null_mx'
          ? {
              kind: 'bounced',
              bounceType: 'hard',
              reply: reply(556, '5.1.10', `${domain} accepts no mail (null MX, RFC 7505)`, 'dns_failure'),
              suppress: true,
            }
          : mx.kind === 'no_domain'
            ? {
                kind: 'bounced',
                bounceType: 'hard',
                reply: reply(550, '5.1.2', mx.detail, 'dns_failure'),
                suppress: true,
              }
            : { kind: 'deferred', reply: reply(451, '4.4.3', mx.detail, 'dns_failure') },
    };
  const hosts = mx.hosts.map((h) => h.host);
  const sts = deps.mtaSts ? await deps.mtaSts.policyState(domain) : undefined;
  const policy = sts?.policy;
  if (policy?.mode !== 'enforce') {
    // Testing: delivered as without a policy, the certificate checked only for the TLS reports.
    const smtp = policy?.mode === 'testing' && deps.tlsLog ? { ...deps.smtp, auditTls: true } : deps.smtp;
    return { hosts, smtp, implicit: mx.implicit, ...(sts ? { sts } : {}) };
  }
  const allowed = hosts.filter((h) => mxMatches(policy.mx, h));
  if (allowed.length === 0) {
    const words = `${domain}: no MX host matches its MTA-STS policy (mx: ${policy.mx.join(', ')})`;
    for (const host of hosts)
      deps.tlsLog?.record({
        policy: hostPolicy(domain, host, sts),
        failure: tlsFailure('validation-failure', host, words),
      });
    return { outcome: { kind: 'deferred', reply: reply(451, '4.7.5', words, 'tls_failure') } };
  }
  return { hosts: allowed, smtp: { ...deps.smtp, requireValidTls: true }, implicit: mx.implicit, sts };
}
