import { addressKey } from '../domain/addresses.js';
import { UnsendableMessage } from '../domain/errors.js';
import { type Outcome, type Reply, reply, type SuppressionPolicy, suppressFor } from '../domain/outcome.js';
import { returnPath } from '../domain/return-path.js';
import type { Logger } from '../lib/logger.js';
import { reclaimAfter } from '../lib/reclaim.js';
import type { Claimed, QueuedMessage } from '../store/model.js';
import type { Store } from '../store/store.js';
import type { Dane } from './dane.js';
import { type MtaSts, mxMatches } from './mta-sts.js';
import type { MxResolver } from './mx.js';
import type { Signed, SignInput } from './signer.js';
import { type Prepared, SigningWindow } from './signing-window.js';
import { type RelayOptions, replyOf, type SmtpOptions, SmtpSession, type TransactionResult, type Via } from './smtp.js';
import { isRateLimit } from './throttle.js';

export interface DeliveryItem {
  recipient: Claimed;
  message: QueuedMessage;
}

export interface ItemResult {
  item: DeliveryItem;
  outcome: Outcome;
  /** The session it was tried over, for the delivery log; absent when nothing was sent (no connection, suppressed, not composed). */
  via?: Via;
}

export interface DeliverDeps {
  store: Pick<Store, 'suppressions' | 'domains'>;
  /** MTA-STS policies; undefined when outbound.mta_sts is off. */
  mtaSts?: MtaSts;
  /** DANE policies (TLSA through a validating resolver); undefined when outbound.dane is off. */
  dane?: Dane;
  /** Composes (first time) and DKIM-signs; a SignerPool in the daemon. */
  sign: (input: SignInput) => Promise<Signed>;
  mx: MxResolver;
  smtp: SmtpOptions;
  /** outbound.relay: everything goes through this host instead of the recipients' MX hosts. */
  relay?: RelayOptions;
  returnPathDomain: string;
  returnPathSecret: Buffer;
  /** Which permanent failures suppress the address ([bounces] in the configuration). */
  suppression: SuppressionPolicy;
  log: Logger;
}

export interface GroupResult {
  results: ItemResult[];
  /** Not tried because the destination asked us to slow down: no attempt, no event; held back by the scheduler. */
  unattempted: DeliveryItem[];
  /** The reply that asked us to slow down (a 421 or a rate limit), when one did. */
  refusal: Reply | null;
  /** Messages composed for the first time: stored with the outcomes while a recipient may still be retried (store/sqlite/queue.ts keepComposed; store/pg/delivery.ts). */
  composed: Map<number, Buffer>;
}

/**
 * Delivers a group of recipients at one destination domain over one connection: check the
 * suppression list again, resolve MX (or take the relay host), connect, then one transaction per
 * recipient (each has its own return path). Never throws for a remote problem: every item ends in an outcome.
 */
export async function deliverGroup(deps: DeliverDeps, domain: string, items: DeliveryItem[]): Promise<GroupResult> {
  const group: GroupResult = { results: [], composed: new Map(), unattempted: [], refusal: null };
  const pending = await checkSuppression(deps, items, group.results);
  if (pending.length === 0) return group;
  const route = deps.relay
    ? { hosts: [deps.relay.host], smtp: deps.smtp, implicit: false }
    : await directRoute(deps, domain);
  if ('outcome' in route) {
    for (const item of pending) group.results.push({ item, outcome: route.outcome });
    return group;
  }
  // The sender domains (their keys) this group signs with, each read once for the group.
  const senders: SenderDomains = new Map();
  const window = new SigningWindow(pending, (m) => prepare(deps, m, group.composed, senders));
  // Connect only once the first message is ready (a cold signing thread takes seconds to start),
  // so no remote server waits on us mid-conversation.
  await window.signedFor(0);
  await new GroupSender(deps, { ...route, domain }, group, window, new SendQueue(pending)).run();
  return group;
}

/** Step: connect, send each item of the queue in turn, reconnect once if the connection is lost, finish. */
class GroupSender {
  /** Why the items left at the end were not sent (deferred with it). */
  private lastFailure: Reply;

  constructor(
    private readonly deps: DeliverDeps,
    private readonly route: Route & { domain: string },
    private readonly group: GroupResult,
    private readonly window: SigningWindow,
    private readonly queue: SendQueue,
  ) {
    this.lastFailure = reply(451, '4.4.1', `${route.domain}: no MX host could be reached`, 'connection_failure');
  }

  async run(): Promise<void> {
    // A connection lost mid-way is re-opened once for the rest of the group.
    for (let round = 0; round < 2 && !this.queue.empty; round++) {
      const opened = await connect(this.deps, this.route);
      if ('failure' in opened) {
        this.connectionFailed(opened.failure);
        break;
      }
      try {
        await this.sendOver(opened.session);
      } finally {
        await opened.session.close();
      }
    }
    for (const item of this.queue.takeRest())
      this.group.results.push({ item, outcome: { kind: 'deferred', reply: this.lastFailure } });
  }

  /** No host could be reached; on "too many connections", one recipient carries the reply and the rest wait for the destination. */
  private connectionFailed(failure: Reply): void {
    this.lastFailure = failure;
    if (!isRateLimit(failure)) return;
    this.group.refusal = failure;
    const [first, ...rest] = this.queue.takeRest();
    this.group.results.push({ item: first!, outcome: { kind: 'deferred', reply: failure } });
    this.group.unattempted.push(...rest);
  }

  /** Sends the queue's items over one session, until it is empty or the session cannot go on (the rest then stays queued). */
  private async sendOver(session: SmtpSession): Promise<void> {
    while (!this.queue.empty) {
      const { item, at } = this.queue.take();
      const message = await this.window.signedFor(at);
      this.window.sent(item);
      if (!Buffer.isBuffer(message)) {
        this.group.results.push({ item, outcome: message });
        continue;
      }
      const r = await this.sendOne(session, item, message);
      if (r.kind === 'refused' && !r.permanent && isRateLimit(r.reply)) {
        // The destination asks us to slow down: sending the rest now would only collect more refusals.
        this.group.refusal = r.reply;
        this.group.unattempted.push(...this.queue.takeRest());
        return;
      }
      // A completed transaction leaves the session ready (RFC 5321 4.1.1.4); RSET only after a failed one.
      const ready = r.kind === 'accepted' ? session.usable : await session.reset();
      if (!this.queue.empty && !ready) return;
    }
  }

  /** One transaction, its outcome recorded. */
  private async sendOne(session: SmtpSession, item: DeliveryItem, message: Buffer): Promise<TransactionResult> {
    const { deps } = this;
    const from = returnPath(deps.returnPathSecret, item.recipient.id, deps.returnPathDomain);
    const via = session.via;
    const r = await session.send(from, item.recipient.address, message);
    reclaimAfter(message.length);
    if (r.kind === 'accepted')
      this.group.results.push({
        item,
        via,
        outcome: {
          kind: 'delivered',
          reply: r.reply,
          mx: session.mx,
          tls: session.secure,
          tlsVerified: session.verified,
        },
      });
    else if (r.kind === 'refused' && r.permanent) {
      const suppress = suppressFor(
        {
          classification: r.reply.classification,
          status: r.reply.enhanced_code || null,
          stage: r.stage,
          text: r.reply.message,
        },
        deps.suppression,
      );
      this.group.results.push({
        item,
        via,
        outcome: { kind: 'bounced', bounceType: 'hard', reply: r.reply, suppress },
      });
    } else if (r.kind === 'refused')
      this.group.results.push({ item, via, outcome: { kind: 'deferred', reply: r.reply, mx: session.mx } });
    else {
      // Broken mid-transaction: this recipient is deferred (the server may or may not have it).
      this.group.results.push({ item, via, outcome: { kind: 'deferred', reply: r.reply, mx: session.mx } });
      this.lastFailure = r.reply;
    }
    return r;
  }
}

/** The items of a group still to send, in order; each keeps its place in the group (for the signing window). */
class SendQueue {
  private next = 0;

  constructor(private readonly items: readonly DeliveryItem[]) {}

  get empty(): boolean {
    return this.next >= this.items.length;
  }

  /** The next item to send, and its place in the group. */
  take(): { item: DeliveryItem; at: number } {
    const at = this.next++;
    return { item: this.items[at]!, at };
  }

  /** Every item still to send, taken out of the queue. */
  takeRest(): DeliveryItem[] {
    const rest = this.items.slice(this.next);
    this.next = this.items.length;
    return rest;
  }
}

/**
 * Step: where a domain's mail goes when it goes direct: its MX hosts, narrowed by its MTA-STS
 * policy in enforce mode (only the hosts it names, only over valid TLS); or the outcome for all
 * of its recipients when there is nowhere to go.
 */
async function directRoute(deps: DeliverDeps, domain: string): Promise<Route | { outcome: Outcome }> {
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
  const policy = deps.mtaSts ? await deps.mtaSts.policy(domain) : null;
  if (policy?.mode !== 'enforce') return { hosts, smtp: deps.smtp, implicit: mx.implicit };
  const allowed = hosts.filter((h) => mxMatches(policy.mx, h));
  if (allowed.length === 0)
    return {
      outcome: {
        kind: 'deferred',
        reply: reply(
          451,
          '4.7.5',
          `${domain}: no MX host matches its MTA-STS policy (mx: ${policy.mx.join(', ')})`,
          'tls_failure',
        ),
      },
    };
  return { hosts: allowed, smtp: { ...deps.smtp, requireValidTls: true }, implicit: mx.implicit };
}

/** Step: a recipient suppressed since it was queued is not sent to. */
async function checkSuppression(
  deps: DeliverDeps,
  items: DeliveryItem[],
  results: ItemResult[],
): Promise<DeliveryItem[]> {
  const byCustomer = new Map<number, DeliveryItem[]>();
  for (const it of items) {
    const list = byCustomer.get(it.message.customerId);
    if (list) list.push(it);
    else byCustomer.set(it.message.customerId, [it]);
  }
  const keep: DeliveryItem[] = [];
  for (const [customerId, list] of byCustomer) {
    const suppressed = await deps.store.suppressions.find(
      customerId,
      list.map((i) => i.recipient.address),
    );
    for (const it of list) {
      const reason = suppressed.get(addressKey(it.recipient.address));
      if (reason) results.push({ item: it, outcome: { kind: 'suppressed', reason } });
      else keep.push(it);
    }
  }
  return keep;
}

/** Where a group goes: its hosts in order (MX hosts, or the relay host), how to speak to them. */
interface Route {
  hosts: string[];
  smtp: SmtpOptions;
  /** The domain has no MX and is its own host (RFC 5321 5.1). */
  implicit: boolean;
}

/**
 * Step: try each MX host (or the relay host) in order, each of its addresses in turn, until one
 * answers; under DANE, a host whose TLSA records could not be looked up is passed over, and one
 * with records is spoken to over TLS they authenticate.
 */
async function connect(
  deps: DeliverDeps,
  route: Route & { domain: string },
): Promise<{ session: SmtpSession } | { failure: Reply }> {
  const { relay } = deps;
  let failure: Reply = reply(451, '4.4.1', 'no MX host could be reached', 'connection_failure');
  for (const host of route.hosts) {
    let addresses: string[];
    try {
      addresses = await deps.mx.addresses(host);
    } catch (e) {
      failure = reply(451, '4.4.3', `${host}: ${(e as Error).message}`, 'dns_failure');
      continue;
    }
    const smtp = relay || !deps.dane ? route.smtp : await daneOptions(deps.dane, route, host);
    if ('failure' in smtp) {
      failure = smtp.failure;
      continue;
    }
    for (const address of addresses) {
      try {
        return {
          session: relay
            ? await SmtpSession.openRelay(address, relay, smtp)
            : await SmtpSession.open(host, address, smtp),
        };
      } catch (e) {
        failure = replyOf(e as Error);
        failure = { ...failure, message: `${host} [${address}]: ${failure.message}` };
        deps.log.debug(
          { mx: host, address, code: failure.code, err: failure.message },
          'MX host failed; trying the next',
        );
      }
    }
  }
  return { failure };
}

/** The SMTP options for one MX host under its DANE policy; where there are TLSA records, DANE rather than MTA-STS decides how TLS is checked (RFC 8461 2). */
async function daneOptions(
  dane: Dane,
  route: Route & { domain: string },
  host: string,
): Promise<SmtpOptions | { failure: Reply }> {
  const policy = await dane.policy(route.domain, host, route.implicit);
  if (policy.kind === 'none') return route.smtp;
  if (policy.kind === 'temporary') return { failure: reply(451, '4.7.5', `${host}: ${policy.detail}`, 'dns_failure') };
  return { ...route.smtp, dane: { verify: policy.kind === 'dane' ? dane.verifier(policy.records, host) : null } };
}

/** Step: compose (a send request's first time only; a submitted message is signed as it is) and DKIM-sign with the sender domain's key. */
type SenderDomains = Map<string, ReturnType<DeliverDeps['store']['domains']['find']>>;

async function prepare(
  deps: DeliverDeps,
  m: QueuedMessage,
  composed: Map<number, Buffer>,
  senders: SenderDomains,
): Promise<Prepared> {
  let result: Prepared;
  let found = senders.get(m.senderDomain);
  if (!found) senders.set(m.senderDomain, (found = deps.store.domains.find(m.senderDomain)));
  const domain = await found;
  if (!domain || domain.customer_id !== m.customerId) {
    result = {
      kind: 'bounced',
      bounceType: 'hard',
      reply: reply(550, '5.7.0', `sender domain ${m.senderDomain} was removed; the message cannot be signed`, 'policy'),
      suppress: false,
    };
  } else {
    try {
      const out = await deps.sign({
        request: m.request,
        format: m.requestFormat,
        messageId: m.messageId,
        createdAt: m.createdAt,
        raw: m.raw,
        key: { domain: domain.name, selector: domain.dkim_selector, privateKey: domain.dkim_private_key },
      });
      if (out.raw) composed.set(m.id, out.raw);
      result = out.signed;
    } catch (e) {
      if (e instanceof UnsendableMessage) {
        // It will never compose or validate as it stands: fail it now rather than retry until it
        // expires. 'policy' blames the message, not the address, so nobody is suppressed.
        deps.log.warn(
          { message_id: m.messageId, err: e.message },
          'message cannot be sent as it stands; failed without retrying',
        );
        result = {
          kind: 'bounced',
          bounceType: 'hard',
          reply: reply(554, '5.6.0', `the message was not sent: ${e.message}`, 'policy'),
          suppress: false,
        };
      } else {
        // Composing or signing failed otherwise: a fault on our side, so retry later rather than bounce.
        deps.log.error({ message_id: m.messageId, err: (e as Error).message }, 'composing or signing failed');
        result = {
          kind: 'deferred',
          reply: reply(451, '4.3.0', `local error while preparing the message: ${(e as Error).message}`, 'other'),
        };
      }
    }
  }
  return result;
}
