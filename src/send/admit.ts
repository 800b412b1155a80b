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
  /** The pool chosen for it, admitted. */
  pool?: string;
}

/** Refusals this step decides (the commit decides the others, a quota among them, against what it reads in its transaction). */
export type AdmitRefusal = Extract<
  Refusal,
  {
    kind:
      | 'from_not_allowed'
      | 'domain_unknown'
      | 'domain_unverified'
      | 'unsubscribe_unavailable'
      | 'customer_paused'
      | 'pool_not_allowed';
  }
>;

/** What the server allows every send: each door has it from its settings. */
export interface SendRules {
  /** The server's default send quotas (limits.send_per_* and limits.sandbox_send_per_*). */
  quotas: QuotaDefaults;
  /** The names of the pools this node has (outbound.pools). */
  pools: ReadonlySet<string>;
  /** Whether one-click unsubscribe is offered (unsubscribe.public_url is configured). */
  unsubscribeOffered: boolean;
}

const poolNames = new WeakMap<object, ReadonlySet<string>>();

/**
 * A door's SendRules from its settings: the quotas as reloaded, the pools and the unsubscribe
 * URL as the node started (they are not reloadable), the set of pool names built once.
 */
export function sendRules(deps: {
  send: { current: { quotas: QuotaDefaults } };
  config: { outbound: { pools: ReadonlyArray<{ name: string }> }; unsubscribe: { public_url: string } };
}): SendRules {
  const { pools } = deps.config.outbound;
  let names = poolNames.get(pools);
  if (!names) poolNames.set(pools, (names = new Set(pools.map((p) => p.name))));
  return {
    quotas: deps.send.current.quotas,
    pools: names,
    unsubscribeOffered: deps.config.unsubscribe.public_url !== '',
  };
}

/** What a send asks, as its door read it. */
export interface SendAsk {
  /** The key the send came with (already authenticated). */
  key: ApiKeyInfo;
  /** The domain of its From address. */
  fromDomain: string;
  /** The List-Unsubscribe fields asked for. */
  unsubscribe: boolean;
  /** The pool of source addresses chosen for it, if any (the API's `pool`, X-Posthaste-Pool). */
  pool?: string;
  now: number;
}

/**
 * The customer not paused (a sandbox key's sends go on: they leave nothing); the sender domain
 * checked: first against the key's own from_domains (domain/key-scopes.ts; on the key the send
 * already looked up, no read of its own), then that it is the key's customer's and verified (a
 * refusal never from a stale cache, and never saying whose another customer's domain is); a
 * chosen pool configured and one the customer may choose (its allowed pools or its default); the
 * Message-ID drawn, the quotas named. A pause that comes after this step is the commit's to
 * refuse: pausing moves the auth epoch (store/auth-cache.ts), as a change of pools does. A send
 * asking for the List-Unsubscribe fields is refused when no unsubscribe.public_url is configured,
 * rather than sent without them.
 */
export async function admitSend(
  auth: Pick<AuthCache, 'sendingDomain' | 'pause' | 'mayChoosePool'>,
  rules: SendRules,
  ask: SendAsk,
): Promise<Admitted | AdmitRefusal> {
  const { key, fromDomain } = ask;
  if (key.kind !== 'sandbox') {
    const paused = await auth.pause(key.customer_id);
    if (paused) return { kind: 'customer_paused', reason: paused.reason };
  }
  if (!fromDomainAllowed(key, fromDomain)) return { kind: 'from_not_allowed', allowed: key.from_domains ?? [] };
  if (ask.unsubscribe && !rules.unsubscribeOffered) return { kind: 'unsubscribe_unavailable' };
  if (ask.pool !== undefined) {
    const refused = await poolRefusal(auth, rules, key.customer_id, ask.pool);
    if (refused) return refused;
  }
  const domain = await auth.sendingDomain(key.customer_id, fromDomain);
  if (!domain || domain.customer_id !== key.customer_id) return { kind: 'domain_unknown' };
  if (domain.verified_at === null) return { kind: 'domain_unverified' };
  return {
    domain,
    messageId: `${timeSortableId(ask.now, BASE32)}@${domain.name}`,
    quotas: key.kind === 'sandbox' ? rules.quotas.sandbox : rules.quotas.live,
    ...(ask.pool !== undefined ? { pool: ask.pool } : {}),
  };
}

/** A chosen pool this node does not have, or the customer may not choose; undefined when it may. */
async function poolRefusal(
  auth: Pick<AuthCache, 'mayChoosePool'>,
  rules: SendRules,
  customerId: number,
  pool: string,
): Promise<AdmitRefusal | undefined> {
  const may = await auth.mayChoosePool(customerId, pool);
  if (!rules.pools.has(pool))
    return {
      kind: 'pool_not_allowed',
      pool,
      configured: false,
      allowed: may.choices.filter((p) => rules.pools.has(p)),
    };
  if (!may.allowed) return { kind: 'pool_not_allowed', pool, configured: true, allowed: may.choices };
  return undefined;
}

export const isRefused = (a: Admitted | AdmitRefusal): a is AdmitRefusal => 'kind' in a;

/** What only the door knows of a message: what it read from its request. */
export type SendContent = Omit<
  AcceptInput,
  'customerId' | 'apiKeyId' | 'sandbox' | 'messageId' | 'senderDomain' | 'now' | 'idempotency' | 'pool'
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
    ...(admitted.pool !== undefined ? { pool: admitted.pool } : {}),
    ...content,
    now,
  };
}
