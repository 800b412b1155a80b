import type { Refusal } from '../domain/errors.js';
import { fromDomainAllowed } from '../domain/key-scopes.js';
import type { QuotaDefaults, QuotaLimits } from '../domain/quotas.js';
import { BASE32, timeSortableId } from '../lib/ids.js';
import type { AuthCache } from '../store/auth-cache.js';
import type { AcceptInput, ApiKeyInfo, SendingDomain } from '../store/model.js';

/**
 * A send's own steps before its commit, the same behind both doors (the HTTP API's send and batch
 * routes, and SMTP submission): the sender's domain this key's customer's and verified, the
 * Message-ID drawn, the accept input assembled. What is refused is a value (domain/errors.ts,
 * Refusal) that each door says its own way: api/ as its HTTP error (`refusal`), submission/ as an
 * SMTP reply (submission/accept.ts). A rule a send must obey (a quota, a pause, a pool, a key's
 * restriction) is decided here once, never in a door.
 */
export interface Admitted {
  domain: SendingDomain;
  messageId: string;
  /**
   * The server's default send quotas for this key's kind: the commit judges the send against them
   * (a production key's customer's own quotas replace them) and counts it, in the transaction that
   * stores it (domain/quotas.ts), so the quota holds exactly under concurrency and across nodes.
   */
  quotas: QuotaLimits;
}

/** Refusals this step decides (the commit decides the others, a quota among them, against what it reads in its transaction). */
export type AdmitRefusal = Extract<
  Refusal,
  { kind: 'from_not_allowed' | 'domain_unknown' | 'domain_unverified' | 'unsubscribe_unavailable' | 'customer_paused' }
>;

/**
 * The customer not paused (a sandbox key's sends go on: they leave nothing); the sender domain
 * checked: first against the key's own from_domains (domain/key-scopes.ts; on the key the send
 * already looked up, no read of its own), then that it is the key's customer's and verified (a
 * refusal never from a stale cache, and never saying whose another customer's domain is); the
 * Message-ID drawn, the quotas named. A pause that comes after this step is the commit's to refuse: pausing moves
 * the auth epoch (store/auth-cache.ts). A send asking for the List-Unsubscribe fields is refused
 * when no unsubscribe.public_url is configured, rather than sent without them.
 */
export async function admitSend(
  auth: Pick<AuthCache, 'sendingDomain' | 'pause'>,
  key: ApiKeyInfo,
  fromDomain: string,
  now: number,
  quotas: QuotaDefaults,
  unsubscribe: { asked: boolean; offered: boolean } = { asked: false, offered: false },
): Promise<Admitted | AdmitRefusal> {
  if (key.kind !== 'sandbox') {
    const paused = await auth.pause(key.customer_id);
    if (paused) return { kind: 'customer_paused', reason: paused.reason };
  }
  if (!fromDomainAllowed(key, fromDomain)) return { kind: 'from_not_allowed', allowed: key.from_domains ?? [] };
  if (unsubscribe.asked && !unsubscribe.offered) return { kind: 'unsubscribe_unavailable' };
  const domain = await auth.sendingDomain(key.customer_id, fromDomain);
  if (!domain || domain.customer_id !== key.customer_id) return { kind: 'domain_unknown' };
  if (domain.verified_at === null) return { kind: 'domain_unverified' };
  return {
    domain,
    messageId: `${timeSortableId(now, BASE32)}@${domain.name}`,
    quotas: key.kind === 'sandbox' ? quotas.sandbox : quotas.live,
  };
}

export const isRefused = (a: Admitted | AdmitRefusal): a is AdmitRefusal => 'kind' in a;

/** What only the door knows of a message: what it read from its request. */
export type SendContent = Omit<
  AcceptInput,
  'customerId' | 'apiKeyId' | 'sandbox' | 'messageId' | 'senderDomain' | 'now' | 'idempotency'
>;

/** The store's accept input for an admitted send (its Idempotency-Key, if any, is the door's to add). */
export function acceptInputOf(
  key: ApiKeyInfo,
  admitted: Admitted,
  content: SendContent,
  now: number,
): Omit<AcceptInput, 'idempotency'> {
  return {
    customerId: key.customer_id,
    apiKeyId: key.id,
    sandbox: key.kind === 'sandbox',
    messageId: admitted.messageId,
    senderDomain: admitted.domain.name,
    quotas: admitted.quotas,
    ...content,
    now,
  };
}
