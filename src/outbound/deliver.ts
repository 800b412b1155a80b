import { addressKey } from '../domain/addresses.js';
import { returnPathInUse } from '../domain/dns-records.js';
import { type Outcome, type Reply, reply, type SuppressionPolicy, suppressFor } from '../domain/outcome.js';
import { returnPath } from '../domain/return-path.js';
import { reclaimAfter } from '../lib/reclaim.js';
import type { Claimed, QueuedMessage } from '../store/model.js';
import type { Store } from '../store/store.js';
import { type PrepareDeps, prepare, type SenderDomains, unsubscribeDefaults } from './prepare.js';
import { connect, directRoute, type Route, type RouteDeps } from './routing/route.js';
import { SigningWindow } from './signing/window.js';
import type { SmtpSession, TransactionResult, Via } from './smtp/session.js';
import type { SourceNeed } from './source.js';
import { isRateLimit } from './throttle.js';

export interface DeliveryItem {
  recipient: Claimed;
  message: QueuedMessage;
  /** With pools: the source its connection needs, told at its claim (outbound/lanes.ts). */
  source?: SourceNeed;
}

export interface ItemResult {
  item: DeliveryItem;
  outcome: Outcome;
  /** The session it was tried over, for the delivery log; absent when nothing was sent (no connection, suppressed, not composed). */
  via?: Via;
}

export interface DeliverDeps extends RouteDeps, PrepareDeps {
  store: Pick<Store, 'suppressions' | 'domains' | 'customers'>;
  /** smtp.return_path_label: a sending domain's return-path host is used only while it is <label>.<domain>. */
  returnPathLabel: string;
  returnPathSecret: Buffer;
  /** Which permanent failures suppress the address ([bounces] in the configuration). */
  suppression: SuppressionPolicy;
}

export interface GroupResult {
  results: ItemResult[];
  /** Not tried because the destination asked us to slow down: no attempt, no event; held back by the scheduler. */
  unattempted: DeliveryItem[];
  /** The reply that asked us to slow down (a 421 or a rate limit), when one did. */
  refusal: Reply | null;
  /** Messages composed for the first time: stored with the outcomes while a recipient may still be retried (store/sqlite/queue.ts keepComposed; store/pg/delivery.ts). */
  composed: Map<number, Buffer>;
  /** Not tried because their customer was paused meanwhile: no attempt, no event; given back to the queue. */
  givenBack: DeliveryItem[];
}

/** What the caller watches over a group while its connection is open (the scheduler). */
export interface GroupWatch {
  /** Whether a customer is paused (as last read, without a store read): its items not yet sent are given back. */
  paused(customerId: number): boolean;
  /** A transaction's outcome was added to the group's results (the scheduler writes a long connection's as they come). */
  progress(group: GroupResult): void;
}

/**
 * Delivers a group of recipients at one destination domain over one connection: check the
 * suppression list again, resolve MX (or take the relay host), connect, then one transaction per
 * recipient (each has its own return path). Never throws for a remote problem: every item ends in an outcome.
 */
export async function deliverGroup(
  deps: DeliverDeps,
  domain: string,
  items: DeliveryItem[],
  watch?: GroupWatch,
  /** With pools: the source address the connection binds (its lane's, outbound/lanes.ts). */
  need?: SourceNeed,
): Promise<GroupResult> {
  const group: GroupResult = { results: [], composed: new Map(), unattempted: [], refusal: null, givenBack: [] };
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
  const defaults = await unsubscribeDefaults(deps, pending);
  const unsubscribe = (m: QueuedMessage) => m.unsubscribe || defaults.has(m.customerId);
  const signing = { composed: group.composed, senders, composing: new Map(), unsubscribe };
  const window = new SigningWindow(pending, (item) => prepare(deps, item, signing), unsubscribe);
  // Connect only once the first message is ready (a cold signing thread takes seconds to start),
  // so no remote server waits on us mid-conversation.
  await window.signedFor(0);
  const queue = new SendQueue(pending);
  await new GroupSender(deps, { ...route, domain }, group, window, queue, senders, need, watch).run();
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
    private readonly senders: SenderDomains,
    /** The source its connections need (outbound.pools); undefined without pools. */
    private readonly need?: SourceNeed,
    private readonly watch?: GroupWatch,
  ) {
    this.lastFailure = reply(451, '4.4.1', `${route.domain}: no MX host could be reached`, 'connection_failure');
  }

  async run(): Promise<void> {
    // A connection lost mid-way is re-opened once for the rest of the group.
    for (let round = 0; round < 2 && !this.queue.empty; round++) {
      const opened = await connect(this.deps, this.route, this.need);
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
      if (this.watch?.paused(item.message.customerId)) {
        // Its customer was paused since the claim (docs/operations.md, "Reputation"): not sent.
        this.window.sent(item);
        this.group.givenBack.push(item);
        continue;
      }
      const message = await this.window.signedFor(at);
      this.window.sent(item);
      if (!Buffer.isBuffer(message)) {
        this.group.results.push({ item, outcome: message });
        continue;
      }
      const r = await this.sendOne(session, item, message);
      this.watch?.progress(this.group);
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

  /**
   * The envelope sender's domain: the sender domain's own return path host once verification found
   * it (SPF then aligns with the From domain) and while it is still the configured label's host,
   * else the server's return path domain (docs/delivery.md, "Sending identities").
   */
  private async envelopeDomain(item: DeliveryItem): Promise<string> {
    const sender = await this.senders.get(item.message.senderDomain);
    return (sender && returnPathInUse(sender, this.deps.returnPathLabel)) ?? this.deps.returnPathDomain;
  }

  /** One transaction, its outcome recorded. */
  private async sendOne(session: SmtpSession, item: DeliveryItem, message: Buffer): Promise<TransactionResult> {
    const { deps } = this;
    const from = returnPath(deps.returnPathSecret, item.recipient.id, await this.envelopeDomain(item));
    const via = session.via;
    const source = via.source ? { source: via.source } : {};
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
          ...source,
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
        outcome: { kind: 'bounced', bounceType: 'hard', reply: r.reply, suppress, ...source },
      });
    } else if (r.kind === 'refused')
      this.group.results.push({ item, via, outcome: { kind: 'deferred', reply: r.reply, mx: session.mx, ...source } });
    else {
      // Broken mid-transaction: this recipient is deferred (the server may or may not have it).
      this.group.results.push({ item, via, outcome: { kind: 'deferred', reply: r.reply, mx: session.mx, ...source } });
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
