import type { SMTPServerAddress } from 'smtp-server';
import { returnPathDomain, returnPathLabel } from '../config/settings.js';
import { parseReturnToken } from '../domain/return-path.js';
import { parseUnsubscribeToken } from '../domain/unsubscribe.js';
import { isStoreUnavailable } from '../store/errors.js';
import type { ReceivingDomain } from '../store/model.js';
import { type Route, routeRecipient } from './route.js';
import { type AcceptedRoute, type ListenerDeps, type Session, smtpError } from './session.js';

/**
 * RCPT TO: within smtp.max_recipients, a recipient posthaste takes mail for (route.ts), and for a
 * receiving domain, within its inbound limits. Resolves when the recipient is taken (added to the
 * session's routes); rejects with the SMTP refusal otherwise.
 */
export async function acceptRecipient(deps: ListenerDeps, address: SMTPServerAddress, session: Session): Promise<void> {
  const routes = (session.routes ??= []);
  if (routes.length >= deps.config.smtp.max_recipients) throw smtpError(452, '4.5.3 Too many recipients');
  let r: AcceptedRoute | { refusal: Error };
  try {
    r = await recipientRoute(deps, address.address);
  } catch (e) {
    if (!isStoreUnavailable(e)) deps.log.error({ err: e }, 'inbound recipient check failed');
    throw smtpError(451, '4.3.0 Local error, try again later');
  }
  if ('refusal' in r) throw r.refusal;
  routes.push(r);
}

/**
 * Where a recipient goes (route.ts, pure), the receiving domain looked up only when the address
 * could be one, and its inbound limits checked (`inbound.limited` at most once an hour).
 */
async function recipientRoute(deps: ListenerDeps, raw: string): Promise<AcceptedRoute | { refusal: Error }> {
  let asked: string | undefined;
  const ctx = {
    returnPathDomain: returnPathDomain(deps.config),
    returnPathLabel: returnPathLabel(deps.config),
    isReturnToken: (token: string) => parseReturnToken(deps.returnPathSecret, token) !== undefined,
    feedbackAddress: deps.config.smtp.feedback_address,
    unsubscribeRecipient: (token: string) => parseUnsubscribeToken(deps.unsubscribeSecret, token),
    dmarcAddress: deps.config.smtp.dmarc_address,
  };
  let route: Route = routeRecipient(raw, {
    ...ctx,
    isReceiving: (domain) => {
      asked = domain;
      return false;
    },
  });
  const receiving =
    asked !== undefined && route.kind === 'refused' ? await deps.store.domains.receiving(asked) : undefined;
  if (receiving) route = routeRecipient(raw, { ...ctx, isReceiving: () => true });
  if (route.kind === 'refused') {
    deps.onResult?.('refused');
    return { refusal: smtpError(550, `5.7.1 <${raw}>: ${route.reason}`) };
  }
  if (route.kind !== 'receiving' || !receiving) return route;
  const refusal = await overLimit(deps, receiving);
  return refusal ? { refusal } : { ...route, receiving };
}

/** The refusal for a receiving domain over its rate or monthly limit (recording `inbound.limited`), or undefined when it is within both. */
async function overLimit(deps: ListenerDeps, receiving: ReceivingDomain): Promise<Error | undefined> {
  const { store, log } = deps;
  const now = deps.clock.now();
  const check = await store.inbound.checkLimits(receiving, deps.settings.current.limits, now);
  if (check.ok) return undefined;
  try {
    if (await store.inbound.recordLimited(receiving, check.limit, check.windowEndsAt, now)) deps.onEvents?.();
  } catch (e) {
    log.error({ err: e }, 'could not record inbound.limited');
  }
  deps.onResult?.('limited');
  return smtpError(
    451,
    `4.7.1 ${receiving.name} is over its ${check.limit === 'rate' ? 'per-minute' : 'monthly'} inbound limit, try again later`,
  );
}
