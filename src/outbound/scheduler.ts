import type { Db } from '../store/db.js';
import { claimDue, loadMessages, recordOutcome, recordAsyncBounce, recordComplaint, storeRaw, releaseClaimsOf, type OutcomePolicy } from '../store/queue.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { DeliveryItem, GroupResult } from './deliver.js';
import { sandboxSteps } from './sandbox.js';
import { PollLoop } from '../lib/poll-loop.js';

export interface SchedulerDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  /** Delivers a group of items at one domain over one connection. */
  deliver: (domain: string, items: DeliveryItem[]) => Promise<GroupResult>;
  policy: OutcomePolicy;
  concurrency: number;
  concurrencyPerDomain: number;
  messagesPerConnection: number;
  claimBatch: number;
  pollInterval: number;
  worker: string;
  /** outbound.hold: while true nothing new is claimed (in-flight deliveries finish); read at every step so a reload applies. */
  held?: () => boolean;
  /** Called after outcomes (and their events) are committed: the webhook dispatcher can go. */
  onEvents?: () => void;
  /** Counts outcomes (Prometheus). */
  onOutcome?: (kind: string) => void;
}

/**
 * Claims due recipients, groups them by destination domain, and runs deliveries within the
 * global and per-domain connection limits. Sandbox recipients never reach `deliver`.
 */
export class Scheduler {
  private backlog = new Map<string, DeliveryItem[]>();
  private active = 0;
  private perDomain = new Map<string, number>();
  private inFlight = new Set<Promise<void>>();
  private readonly loop = new PollLoop();
  private stopped = false;
  /** Highest connections seen open at once per domain (tests and metrics). */
  readonly peakPerDomain = new Map<string, number>();

  constructor(private readonly deps: SchedulerDeps) {}

  /** New work may be due (a message was accepted): look now rather than at the next poll. */
  kick(): void {
    this.loop.wake();
  }

  /** Runs until the signal aborts; then lets in-flight deliveries finish and releases the rest. */
  async run(signal: AbortSignal): Promise<void> {
    await this.loop.run(signal, this.deps.pollInterval, () => this.fill(), (e) => this.deps.log.error({ err: e }, 'scheduler: claim failed; retrying'));
    await this.stop();
  }

  /** Claims and delivers everything due now, and waits until it is all recorded (tests, with a manual clock). */
  async drain(): Promise<void> {
    for (;;) {
      const claimed = this.fill();
      if (claimed === 0 && this.inFlight.size === 0 && this.backlogSize() === 0) return;
      if (this.inFlight.size > 0) await Promise.race(this.inFlight);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.inFlight);
    const ids = [...this.backlog.values()].flat().map((i) => i.recipient.id);
    this.backlog.clear();
    if (ids.length) releaseClaimsOf(this.deps.db, ids);
  }

  private backlogSize(): number {
    let n = 0;
    for (const list of this.backlog.values()) n += list.length;
    return n;
  }

  /** Claims what capacity allows and starts what the limits allow; returns how many were claimed. */
  private fill(): number {
    if (this.stopped || this.deps.held?.()) return 0;
    const { db, clock, claimBatch } = this.deps;
    let claimed = 0;
    const room = claimBatch - this.backlogSize();
    if (room > 0) {
      const rows = claimDue(db, this.deps.worker, clock.now(), room);
      claimed = rows.length;
      if (rows.length) {
        const messages = loadMessages(db, rows.map((r) => r.messageRowId));
        const sandbox: DeliveryItem[] = [];
        for (const r of rows) {
          const message = messages.get(r.messageRowId);
          if (!message) continue;
          if (message.sandbox) sandbox.push({ recipient: r, message });
          else this.backlog.set(r.domain, [...(this.backlog.get(r.domain) ?? []), { recipient: r, message }]);
        }
        if (sandbox.length) this.recordSandbox(sandbox);
      }
    }
    for (const [domain, list] of this.backlog) {
      while (list.length > 0 && this.active < this.deps.concurrency && (this.perDomain.get(domain) ?? 0) < this.deps.concurrencyPerDomain) {
        this.start(domain, list.splice(0, this.deps.messagesPerConnection));
      }
      if (list.length === 0) this.backlog.delete(domain);
    }
    return claimed;
  }

  private start(domain: string, items: DeliveryItem[]): void {
    this.active++;
    const open = (this.perDomain.get(domain) ?? 0) + 1;
    this.perDomain.set(domain, open);
    this.peakPerDomain.set(domain, Math.max(open, this.peakPerDomain.get(domain) ?? 0));
    const p = this.deps
      .deliver(domain, items)
      .then((group) => this.record(group))
      .catch((e: unknown) => {
        // A bug or an infrastructure failure (store): the claims are released and retried later.
        this.deps.log.error({ err: e, domain }, 'delivery group failed; releasing its claims');
        releaseClaimsOf(this.deps.db, items.map((i) => i.recipient.id));
      })
      .finally(() => {
        this.active--;
        this.perDomain.set(domain, (this.perDomain.get(domain) ?? 1) - 1);
        this.inFlight.delete(p);
        this.kick();
      });
    this.inFlight.add(p);
  }

  /** One transaction for a whole group: the new states, their events and suppressions. */
  private record(group: GroupResult): void {
    const { db, clock, policy, log } = this.deps;
    const now = clock.now();
    db.tx(() => {
      for (const [id, raw] of group.composed) storeRaw(db, id, raw);
      for (const { item, outcome } of group.results) recordOutcome(db, item.message, item.recipient, outcome, policy, now);
    });
    this.deps.onEvents?.();
    for (const { outcome } of group.results) this.deps.onOutcome?.(outcome.kind);
    for (const { item, outcome } of group.results)
      log.info(
        { message_id: item.message.messageId, recipient: item.recipient.address, outcome: outcome.kind, ...('reply' in outcome ? { code: outcome.reply.code, classification: outcome.reply.classification } : {}) },
        'delivery attempt',
      );
  }

  /** Sandbox recipients never open a connection; the simulator domain picks their outcome. */
  private recordSandbox(items: DeliveryItem[]): void {
    const { db, clock, policy } = this.deps;
    const now = clock.now();
    db.tx(() => {
      for (const { recipient, message } of items)
        for (const step of sandboxSteps(recipient.address, recipient.attempts)) {
          if (step.kind === 'async_bounce') recordAsyncBounce(db, message, recipient, step.reply, true, now);
          else if (step.kind === 'complaint') recordComplaint(db, message, recipient, { feedback_type: step.feedbackType, user_agent: step.userAgent, arrival_date: new Date(now).toISOString() }, now);
          else if (step.kind === 'delivered') recordOutcome(db, message, recipient, { kind: 'delivered', reply: step.reply, mx: 'sandbox', tls: false }, policy, now);
          else recordOutcome(db, message, recipient, step, policy, now);
        }
    });
    this.deps.onEvents?.();
  }
}
