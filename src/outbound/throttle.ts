import type { DestinationLimits, DestinationThrottle } from '../domain/destinations.js';
import type { Reply } from '../domain/outcome.js';

/**
 * Per-destination limits and adaptive backoff, as pure state (times are passed in; no I/O).
 *
 * Configured limits: connections at once, messages per connection, messages started in any
 * 60 seconds. Adaptive backoff: a reply that says "too fast" (any 421, or a reply classified
 * rate_limited) pauses the destination for 30 s, doubling with each further refusal up to
 * 15 minutes, and halves its connections (at least one). Each connection that then delivers
 * without being refused takes one refusal off (so the next pause is shorter) and gives one
 * connection back; when none are left the destination runs at its configured limits again.
 * Refusals from connections opened before the last one counted are not counted again: five
 * connections refused at once are one refusal, not five. docs/delivery.md "Destinations".
 *
 * outbound.limits_scope = "cluster": the limits hold for all nodes together. Before deciding for
 * a destination the scheduler hands in the other nodes' use (`share`): their connections count
 * against the destination's connections and their messages started this minute against
 * per_minute (a fixed minute, where a node's own count slides), and a throttling another node
 * recorded is taken over when it is stricter than this node's own. Recovery stays each node's,
 * by its own deliveries.
 */

export const PAUSE_FIRST_MS = 30_000;
export const PAUSE_MAX_MS = 15 * 60_000;
const WINDOW_MS = 60_000;
/** Assumed length of one connection's work until one is measured. */
const DEFAULT_GROUP_MS = 5_000;

export type Admission =
  /** Refused us recently: nothing starts before `until`. */
  | { kind: 'paused'; until: number }
  /** As many connections open as allowed; more start when one ends. */
  | { kind: 'full' }
  /** per_minute reached: the next message may start at `opensAt`. */
  | { kind: 'spent'; opensAt: number }
  /** A connection may open and carry up to `messages`. */
  | { kind: 'open'; messages: number };

/** Handed out when a connection opens, handed back when it ends. */
export interface Ticket {
  destination: string;
  openedAt: number;
  epoch: number;
}

/** What a connection's end changed that must be stored: the new record, or the destination's record removed. */
export type ThrottleChange =
  | { kind: 'set'; record: DestinationThrottle }
  | { kind: 'cleared'; destination: string }
  | null;

interface State {
  open: number;
  /** Counted refusals so far; a ticket from an older epoch neither strikes nor recovers. */
  epoch: number;
  throttled: DestinationThrottle | null;
  /** Messages started per second over the last minute: [second, count], oldest first. */
  starts: Array<[number, number]>;
  groupMs: number;
  /** Next free time for postponed messages, so successive postponements queue up rather than pile up. */
  cursor: number;
  /** The other nodes' use (limits_scope = "cluster"), as last shared. */
  others: { open: number; minute: number; started: number };
}

/** Messages started in second S count until a full minute after that second ends. */
const expiry = (second: number): number => (second + 1) * 1000 + WINDOW_MS;

export function pauseFor(strikes: number): number {
  return Math.min(PAUSE_FIRST_MS * 2 ** Math.max(0, strikes - 1), PAUSE_MAX_MS);
}

/**
 * Whether a reply asks us to slow down: a 421, or a temporary refusal classified rate_limited,
 * except one about a mailbox (enhanced X.2.X, RFC 3463), such as Gmail's "450 4.2.1 The user you
 * are trying to contact is receiving mail too quickly": that recipient waits, the destination does not.
 */
export function isRateLimit(reply: Reply): boolean {
  if (reply.code === 421) return true;
  return (
    reply.code >= 400 &&
    reply.code < 500 &&
    reply.classification === 'rate_limited' &&
    !reply.enhanced_code.startsWith('4.2.')
  );
}

export class Throttle {
  private states = new Map<string, State>();

  constructor(
    /** Read on every decision, so a reload's new limits apply at once. */
    private readonly limitsOf: (destination: string) => DestinationLimits,
    restored: readonly DestinationThrottle[] = [],
  ) {
    for (const r of restored) this.state(r.destination).throttled = { ...r };
  }

  private state(destination: string): State {
    let s = this.states.get(destination);
    if (!s) {
      s = {
        open: 0,
        epoch: 0,
        throttled: null,
        starts: [],
        groupMs: DEFAULT_GROUP_MS,
        cursor: 0,
        others: { open: 0, minute: 0, started: 0 },
      };
      this.states.set(destination, s);
    }
    return s;
  }

  /** Connections open now to the destination. */
  openConnections(destination: string): number {
    return this.states.get(destination)?.open ?? 0;
  }

  /** Whether the destination is being slowed down because it refused us. */
  isThrottled(destination: string): boolean {
    return this.states.get(destination)?.throttled != null;
  }

  /** Connections allowed now: the configured number, or fewer while throttled. */
  connections(destination: string): number {
    const configured = this.limitsOf(destination).connections;
    const t = this.states.get(destination)?.throttled;
    return t ? Math.min(t.connections, configured) : configured;
  }

  /** Messages that may wait for a connection at once: one more round of every allowed connection. */
  capacity(destination: string): number {
    return this.connections(destination) * this.limitsOf(destination).perConnection;
  }

  admit(destination: string, now: number): Admission {
    const s = this.state(destination);
    if (s.throttled && s.throttled.pausedUntil > now) return { kind: 'paused', until: s.throttled.pausedUntil };
    if (s.open + s.others.open >= this.connections(destination)) return { kind: 'full' };
    const limits = this.limitsOf(destination);
    if (limits.perMinute === 0) return { kind: 'open', messages: limits.perConnection };
    const minute = Math.floor(now / WINDOW_MS);
    const others = s.others.minute === minute ? s.others.started : 0;
    const left = limits.perMinute - this.startedInWindow(s, now) - others;
    // The others' count is for the minute: it ends with it (this node's own slides).
    if (left <= 0) return { kind: 'spent', opensAt: others > 0 ? (minute + 1) * WINDOW_MS : expiry(s.starts[0]![0]) };
    return { kind: 'open', messages: Math.min(limits.perConnection, left) };
  }

  /**
   * The other nodes' use of the destination (limits_scope = "cluster"), and its throttling as they
   * stored it: taken over when stricter (a later pause, or more refusals) than this node's own;
   * connections opened before it then neither strike nor recover.
   */
  share(
    destination: string,
    others: { open: number; minute: number; started: number },
    record: DestinationThrottle | null | undefined,
  ): void {
    const s = this.state(destination);
    s.others = { open: others.open, minute: others.minute, started: others.started };
    const mine = s.throttled;
    if (record && (!mine || record.pausedUntil > mine.pausedUntil || record.strikes > mine.strikes)) {
      s.throttled = { ...record };
      s.epoch++;
    }
  }

  /** This node's use of the destination, to share: connections open, messages started in the current minute. */
  own(destination: string, now: number): { open: number; minute: number; started: number } {
    const s = this.state(destination);
    const minute = Math.floor(now / WINDOW_MS);
    let started = 0;
    for (const [second, n] of s.starts) if (Math.floor(second / 60) === minute) started += n;
    return { open: s.open, minute, started };
  }

  /** Drops the counts that have left the window (so the list holds at most about a minute of seconds). */
  private prune(s: State, now: number): void {
    while (s.starts.length > 0 && expiry(s.starts[0]![0]) <= now) s.starts.shift();
  }

  private startedInWindow(s: State, now: number): number {
    this.prune(s, now);
    let n = 0;
    for (const [, c] of s.starts) n += c;
    return n;
  }

  /** A connection opens carrying `messages`. */
  open(destination: string, now: number, messages: number): Ticket {
    const s = this.state(destination);
    s.open++;
    // Counted whether or not per_minute is set (a reload may set it), pruned here so it stays small.
    this.prune(s, now);
    const second = Math.floor(now / 1000);
    const last = s.starts[s.starts.length - 1];
    if (last && last[0] === second) last[1] += messages;
    else s.starts.push([second, messages]);
    return { destination, openedAt: now, epoch: s.epoch };
  }

  /**
   * A connection ended: `refusal` is the reply that asked us to slow down (null if none did),
   * `delivered` how many it delivered. Returns what to store.
   */
  close(ticket: Ticket, outcome: { delivered: number; refusal: Reply | null }, now: number): ThrottleChange {
    const s = this.state(ticket.destination);
    s.open = Math.max(0, s.open - 1);
    s.groupMs = Math.max(1, s.groupMs * 0.8 + (now - ticket.openedAt) * 0.2);
    if (ticket.epoch !== s.epoch) return null; // opened before the last counted refusal
    if (outcome.refusal) {
      s.epoch++;
      const before = s.throttled;
      const strikes = (before?.strikes ?? 0) + 1;
      const connections = Math.max(
        1,
        Math.floor((before ? before.connections : this.limitsOf(ticket.destination).connections) / 2),
      );
      s.throttled = {
        destination: ticket.destination,
        connections,
        strikes,
        pausedUntil: now + pauseFor(strikes),
        reason: outcome.refusal,
        since: before?.since ?? now,
      };
      return { kind: 'set', record: { ...s.throttled } };
    }
    const t = s.throttled;
    if (!t || outcome.delivered === 0) return null;
    const configured = this.limitsOf(ticket.destination).connections;
    const strikes = Math.max(0, t.strikes - 1);
    const connections = Math.min(configured, t.connections + 1);
    if (strikes === 0 && connections >= configured) {
      s.throttled = null;
      return { kind: 'cleared', destination: ticket.destination };
    }
    s.throttled = { ...t, strikes, connections };
    return { kind: 'set', record: { ...s.throttled } };
  }

  /** Whether the destination's adaptive pause holds it now. */
  isPaused(destination: string, now: number): boolean {
    const t = this.states.get(destination)?.throttled;
    return t != null && t.pausedUntil > now;
  }

  /**
   * An operator retried the destination at `retriedAt` (docs/operations.md, "The queue"): a pause
   * set before then ends now, and what was held back is no longer queued behind it. Its refusals
   * and its fewer connections stay (a further refusal pauses it longer); a pause set after the
   * retry stays. Returns whether it lifted one.
   */
  lift(destination: string, retriedAt: number, now: number): boolean {
    const s = this.states.get(destination);
    const t = s?.throttled;
    if (!s || !t || t.pausedUntil <= now || t.pausedUntil - pauseFor(t.strikes) > retriedAt) return false;
    t.pausedUntil = now;
    s.cursor = Math.min(s.cursor, now);
    return true;
  }

  /** When a connection open now is expected to be done (its measured pace). */
  nextRound(destination: string, now: number): number {
    return now + Math.ceil(this.state(destination).groupMs);
  }

  /**
   * Times to hold `n` messages back until, none before `from`: spread at the rate the destination
   * takes them (its connections' measured pace, and per_minute), after any held back before.
   */
  slots(destination: string, n: number, from: number): number[] {
    const s = this.state(destination);
    const limits = this.limitsOf(destination);
    const perMs = Math.min(
      this.capacity(destination) / s.groupMs,
      limits.perMinute > 0 ? limits.perMinute / WINDOW_MS : Infinity,
    );
    const start = Math.max(from, s.cursor);
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(Math.ceil(start + i / perMs));
    s.cursor = start + n / perMs;
    return out;
  }

  /** Drops the state of destinations with nothing open, throttled, counted or held back (it is made again when needed). */
  forgetIdle(now: number): void {
    for (const [destination, s] of this.states) {
      const counting = s.starts.length > 0 && expiry(s.starts[s.starts.length - 1]![0]) > now;
      if (s.open === 0 && !s.throttled && !counting && s.cursor <= now) this.states.delete(destination);
    }
  }

  /** The destinations being slowed down now. */
  throttled(): DestinationThrottle[] {
    return [...this.states.values()].flatMap((s) => (s.throttled ? [{ ...s.throttled }] : []));
  }
}
