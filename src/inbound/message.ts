import type { SMTPServerDataStream } from 'smtp-server';
import type { MemoryBudget } from '../lib/memory-budget.js';
import { reclaimAfter } from '../lib/reclaim.js';
import { readReport } from '../reports/read.js';
import { isStoreFull, isStoreUnavailable } from '../store/errors.js';
import type { StoredInbound } from '../store/model.js';
import { readData } from './data.js';
import { keepDmarcReports } from './dmarc.js';
import { inspectInbound, type ParsedInbound } from './receive.js';
import type { Route } from './route.js';
import { type AcceptedRoute, type ListenerDeps, type Session, smtpError } from './session.js';

/** What DATA brought: the message and its size, or why it was not kept (a bare newline, more than smtp.max_message_bytes, or both). */
type Received = { raw: Buffer; size: number } | { bareNewline: boolean; tooBig: boolean };

/** What became of a message that was read whole: stored (the id the 250 names), or refused for its content. */
type Outcome = { kind: 'stored'; id: string } | { kind: 'refused'; problem: string };

/** The envelope and the connection, as the stored message and the SPF check take them. */
type Envelope = { remoteIp: string; helo: string; mailFrom: string; hostname: string };

/**
 * DATA: the message read (smuggling, size, memory budget), then stored for its recipients (or its
 * report applied). Resolves with the 250's text; rejects with the SMTP refusal.
 */
export async function receiveMessage(
  deps: ListenerDeps,
  stream: SMTPServerDataStream,
  session: Session,
): Promise<string> {
  const got = await readMessage(stream, session, deps.budget, deps.config.smtp.max_message_bytes);
  const release = () => session.hold?.release();
  if (!('raw' in got)) {
    if (got.bareNewline) deps.onResult?.('bare_newline');
    if (got.tooBig) deps.onResult?.('too_big');
    release();
    if (got.bareNewline) throw smtpError(550, '5.5.2 Bare <CR> or <LF> received: message refused (RFC 5321 2.3.8)');
    throw smtpError(552, '5.3.4 Message too big');
  }
  let r: Outcome;
  try {
    r = await storeMessage(deps, got.raw, session);
  } catch (e) {
    release();
    throw storeFailure(deps, e);
  }
  release();
  reclaimAfter(got.size);
  if (r.kind === 'refused') {
    deps.onResult?.('refused_content');
    throw smtpError(554, `5.6.0 Message refused: it has ${r.problem} (see the limits in the documentation)`);
  }
  deps.onResult?.('accepted');
  return `2.0.0 Ok: queued as ${r.id}`;
}

/** DATA read (inbound/data.ts), joined into one buffer unless it is refused. */
async function readMessage(
  stream: SMTPServerDataStream,
  session: Session,
  budget: MemoryBudget,
  max: number,
): Promise<Received> {
  const got = await readData(stream, session, budget, max);
  if (got.bareNewline || got.sizeExceeded) return { bareNewline: got.bareNewline, tooBig: got.sizeExceeded };
  return { raw: Buffer.concat(got.chunks, got.size), size: got.size };
}

/** The refusal for a message the store did not take: 452 when it is full, 451 otherwise (logged unless the store is known to be unavailable, warned then). */
function storeFailure(deps: ListenerDeps, e: unknown): Error {
  if (isStoreFull(e)) return smtpError(452, '4.3.1 Insufficient system storage, try again later');
  if (isStoreUnavailable(e)) {
    deps.log.warn({ err: e }, 'store unavailable: inbound message refused with 451');
    return smtpError(451, '4.3.0 Local error: the store is unavailable, try again later');
  }
  deps.log.error({ err: e }, 'inbound message failed');
  return smtpError(451, '4.3.0 Local error, try again later');
}

/** Stores the message for each route, or refuses it (nothing stored) when it cannot be shown. */
async function storeMessage(deps: ListenerDeps, raw: Buffer, session: Session): Promise<Outcome> {
  const routes = session.routes ?? [];
  const env: Envelope = {
    remoteIp: session.remoteAddress,
    helo: session.hostNameAppearsAs ?? '',
    mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
    hostname: deps.config.server.hostname,
  };
  const receiving = routes.filter((r) => r.kind === 'receiving');
  const inspected = receiving.length ? await inspectInbound(raw, env, deps.resolver) : null;
  if (inspected && !inspected.ok) return { kind: 'refused', problem: inspected.problem };
  // A report is read for what it is, whichever of posthaste's addresses it came to: a complaint
  // sent to a return path is a complaint.
  const reportRoutes = routes.filter(
    (r): r is Extract<Route, { kind: 'bounce' | 'feedback' }> => r.kind === 'bounce' || r.kind === 'feedback',
  );
  const report = reportRoutes.length ? readReport(raw, deps.settings.current.suppression) : null;
  // DMARC reports first, while raw is whole: kept once each, so a retry after a failure below adds nothing.
  if (routes.some((r) => r.kind === 'dmarc')) await keepDmarcReports(deps, raw);
  // A mail to a List-Unsubscribe mailto address is the request itself: what it says is not kept.
  const unsubscribed = routes.some((r) => r.kind === 'unsubscribe') ? await unsubscribeAll(deps, routes) : 'dmarc';
  if (!inspected && reportRoutes.length === 0) return { kind: 'stored', id: unsubscribed };
  // A large message's bytes move to the writer thread rather than being copied; raw is empty afterwards.
  const ids = await deps.store.inbound.receive({
    stores: inspected ? perCustomer(receiving, env, inspected.parsed) : [],
    report,
    reports: reportRoutes.map((r) => ({ mailFrom: env.mailFrom, rcptTo: r.address, route: r.kind })),
    raw,
    secret: deps.returnPathSecret,
    now: deps.clock.now(),
  });
  // Only now, after the commit, does the sender hear 250.
  deps.onEvents?.();
  return { kind: 'stored', id: ids[0] ?? 'report' };
}

/** One stored message per customer, with that customer's envelope recipients. */
function perCustomer(
  receiving: AcceptedRoute[],
  env: Envelope,
  parsed: ParsedInbound,
): Array<Omit<StoredInbound, 'raw'>> {
  const byCustomer = new Map<number, { domainId: number; rcpts: string[] }>();
  for (const r of receiving) {
    const d = r.receiving!;
    const entry = byCustomer.get(d.customerId) ?? { domainId: d.id, rcpts: [] };
    if (r.kind === 'receiving') entry.rcpts.push(r.address);
    byCustomer.set(d.customerId, entry);
  }
  return [...byCustomer].map(([customerId, e]) => ({
    customerId,
    domainId: e.domainId,
    mailFrom: env.mailFrom,
    rcptTo: e.rcpts,
    remoteIp: env.remoteIp,
    helo: env.helo,
    ...parsed,
  }));
}

/** Each unsubscribe route's recipient suppressed (store: suppressions.unsubscribe, once); the id the 250 names. */
async function unsubscribeAll(deps: ListenerDeps, routes: AcceptedRoute[]): Promise<string> {
  let fired = false;
  for (const r of routes)
    if (r.kind === 'unsubscribe')
      fired =
        (await deps.store.suppressions.unsubscribe(r.recipientId, 'mailto', deps.clock.now())) === 'unsubscribed' ||
        fired;
  if (fired) deps.onEvents?.();
  return 'unsubscribe';
}
