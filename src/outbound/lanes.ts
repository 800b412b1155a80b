import type { Pool } from '../config/pools.js';
import { destinationOfLane, laneOf } from '../domain/destinations.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { DeliveryItem } from './deliver.js';
import type { SourceNeed, SourcePicker } from './source.js';
import type { Throttle } from './throttle.js';

// What connections a destination's waiting recipients may open now, and over which source
// address (docs/delivery.md, "Destinations" and "Sending identities"). Receivers count what a
// sending address sends them, so with pools each (destination, source address) is a lane with the
// destination's limits and adaptive backoff of its own: a 421 to one address slows that address,
// not its neighbours. Without pools the destination is the one lane, as it always was.

/** One lane: the throttle's key, and the source it binds (absent without pools). */
export interface Lane {
  key: string;
  need?: SourceNeed;
}

/**
 * The warm-up of source addresses (outbound/warmup.ts): each warming address's cap per
 * destination and UTC day, its room reserved in the store (shared by the nodes) and given back.
 */
export interface WarmupRoom {
  /** The address's cap today; null: not warming. */
  capOf(ip: string, now: number): number | null;
  /** Up to n sends from each address to each destination today; what each was granted. */
  reserve(wants: ReadonlyArray<{ ip: string; destination: string; n: number }>, now: number): Promise<number[]>;
  /** Sends reserved (on the day of `reservedAt`) but not made. */
  giveBack(ip: string, destination: string, n: number, reservedAt: number): Promise<void>;
  /** When the day's caps renew. */
  nextDay(now: number): number;
}

/** A warming address's room at a destination, reserved for one fill. */
interface Room {
  ip: string;
  destination: string;
  left: number;
}

/** A recipient held back in the store until a time. */
export type Held = { id: number; until: number };

/** Until when each of `items` is held back in the store: none before `from`, spread at the pace the lane takes mail. */
export function holdBack(throttle: Throttle, key: string, items: DeliveryItem[], from: number): Held[] {
  const at = throttle.slots(key, items.length, from);
  return items.map((it, i) => ({ id: it.recipient.id, until: at[i]! }));
}

export interface LanesDeps {
  throttle: Throttle;
  clock: Clock;
  log: Logger;
  /** outbound.pools: absent when none are configured. */
  sources?: SourcePicker;
  /** The warm-up of the pools' addresses; absent when none warms. */
  warmup?: WarmupRoom;
}

export class Lanes {
  /** Where each pool's next connection starts looking among its addresses (round robin). */
  private readonly turn = new Map<string, number>();
  /** The warming lanes' room for this fill, by lane key (reserve, then settle). */
  private readonly rooms = new Map<string, Room>();

  constructor(private readonly deps: LanesDeps) {}

  /** With pools: each claimed item's source need (its pool, and the address a retry keeps), told once at its claim. */
  async tag(items: readonly DeliveryItem[]): Promise<void> {
    const { sources } = this.deps;
    if (!sources || items.length === 0) return;
    const needs = await sources.needsOf(items);
    for (const [i, item] of items.entries()) item.source = needs[i]!;
  }

  /**
   * Before a fill: the room each warming address has today at each destination with mail waiting
   * for its pool, reserved in the store (at most what waits); `settle` gives back what the fill
   * did not use.
   */
  async reserve(waiting: ReadonlyArray<{ destination: string; items: readonly DeliveryItem[] }>): Promise<void> {
    const { warmup, clock } = this.deps;
    if (!warmup) return;
    const now = clock.now();
    const wants = new Map<string, { ip: string; destination: string; n: number }>();
    for (const { destination, items } of waiting) {
      // What waits per pool, then each warming address of the pool wants as much.
      const perPool = new Map<Pool, number>();
      for (const { source } of items) perPool.set(source!.pool, (perPool.get(source!.pool) ?? 0) + 1);
      for (const [pool, n] of perPool)
        for (const { ip } of pool.addresses) {
          if (warmup.capOf(ip, now) === null) continue;
          const key = laneOf(destination, ip);
          const want = wants.get(key) ?? { ip, destination, n: 0 };
          want.n += n;
          wants.set(key, want);
        }
    }
    if (wants.size === 0) return;
    const list = [...wants.values()];
    const granted = await warmup.reserve(list, now);
    for (const [i, w] of list.entries()) this.rooms.set(laneOf(w.destination, w.ip), { ...w, left: granted[i]! });
  }

  /** After a fill: the room it did not use, given back. */
  async settle(): Promise<void> {
    const { warmup, clock } = this.deps;
    const left = [...this.rooms.values()].filter((r) => r.left > 0);
    this.rooms.clear();
    if (!warmup) return;
    for (const r of left) await warmup.giveBack(r.ip, r.destination, r.left, clock.now());
  }

  /** After a connection of `lane` ended: of the `carried` it took, what was not sent is given back to a warming address's day. */
  async done(lane: Lane, carried: number, sent: number, openedAt: number): Promise<void> {
    const ip = lane.need?.sticky;
    const { warmup } = this.deps;
    if (!warmup || !ip || carried <= sent || warmup.capOf(ip, openedAt) === null) return;
    // Never rejects: room not given back is only the day's room used up sooner.
    await warmup
      .giveBack(ip, destinationOfLane(lane.key), carried - sent, openedAt)
      .catch((e: unknown) => this.deps.log.warn({ err: e, source_ip: ip }, 'warm-up room not given back'));
  }

  /** Whether any address warms up (else `reserve` and `settle` have nothing to do). */
  get warms(): boolean {
    return this.deps.warmup !== undefined;
  }

  /** Every throttle key a destination may have (its own, and one per source address): a pause or a retry looks at all. */
  keysOf(destination: string): string[] {
    const { sources } = this.deps;
    return sources ? sources.addresses().map((ip) => laneOf(destination, ip)) : [destination];
  }

  /**
   * Starts what the lanes of `destination` allow from one domain's waiting list (taking them out
   * of it; what may wait for a connection stays); returns what is to be held back in the store.
   */
  start(
    destination: string,
    list: DeliveryItem[],
    room: () => boolean,
    open: (lane: Lane, items: DeliveryItem[]) => void,
  ): Held[] {
    if (!this.deps.sources) return this.fill([{ key: destination }], list, room, open);
    // Most often every recipient waiting for a destination needs the same: no parts to make.
    const first = list[0]?.source;
    if (list.every((item) => item.source === first))
      return first ? this.fill(this.lanesFor(destination, first), list, room, open) : [];
    const parts = new Map<SourceNeed, { lanes: Lane[]; items: DeliveryItem[] }>();
    for (const item of list) {
      const need = item.source!;
      let part = parts.get(need);
      if (!part) parts.set(need, (part = { lanes: this.lanesFor(destination, need), items: [] }));
      part.items.push(item);
    }
    const held: Held[] = [];
    const waiting: DeliveryItem[] = [];
    for (const { lanes, items } of parts.values()) {
      held.push(...this.fill(lanes, items, room, open));
      waiting.push(...items);
    }
    list.splice(0, list.length, ...waiting);
    return held;
  }

  /** A need's lanes in the order to try them: a retry's own address, else the pool's from its turn. */
  private lanesFor(destination: string, need: SourceNeed): Lane[] {
    const lane = (ip: string): Lane => ({ key: laneOf(destination, ip), need: { pool: need.pool, sticky: ip } });
    // A retry keeps its address, unless that address's warm-up has no room left today.
    if (need.sticky !== null && this.rooms.get(laneOf(destination, need.sticky))?.left !== 0)
      return [lane(need.sticky)];
    const { addresses } = need.pool;
    const first = this.turn.get(need.pool.name) ?? 0;
    return addresses.map((_, i) => lane(addresses[(first + i) % addresses.length]!.ip));
  }

  /**
   * Opens connections over the first lane that admits one (and, warming, has room today), while
   * items and room last. When none does: wait here for a connection if a lane is full (a throttled
   * one keeps one round here and the rest in the store), else hold them all back until the
   * soonest lane opens again, or, every address out of today's warm-up room, until the next day.
   */
  private fill(
    lanes: Lane[],
    items: DeliveryItem[],
    room: () => boolean,
    open: (lane: Lane, items: DeliveryItem[]) => void,
  ): Held[] {
    const { throttle, clock } = this.deps;
    const now = clock.now();
    while (items.length > 0 && room()) {
      let full: Lane | undefined;
      let soonest: { lane: Lane; at: number } | undefined;
      let opened = false;
      for (const [i, lane] of lanes.entries()) {
        const warm = this.warmRoom(lane, now);
        if (warm?.left === 0) continue;
        const admission = throttle.admit(lane.key, now);
        if (admission.kind === 'open') {
          // The next connection looks at the lanes after this one first.
          lanes.push(...lanes.splice(0, i + 1));
          this.advance(lane);
          const n = Math.min(admission.messages, warm?.left ?? Infinity);
          if (warm) warm.left -= n;
          open(lane, items.splice(0, n));
          opened = true;
          break;
        }
        if (admission.kind === 'full') full ??= lane;
        else {
          const at = admission.kind === 'paused' ? admission.until : admission.opensAt;
          if (!soonest || at < soonest.at) soonest = { lane, at };
        }
      }
      if (opened) continue;
      if (full) {
        // Waiting for a connection. A throttled lane keeps one more round of its (fewer)
        // connections here and the rest in the store, so its backlog does not take the claim room
        // other destinations need; at full speed the backlog moves fast enough to wait here.
        const capacity = throttle.capacity(full.key);
        return throttle.isThrottled(full.key) && items.length > capacity
          ? holdBack(throttle, full.key, items.splice(capacity), throttle.nextRound(full.key, now))
          : [];
      }
      if (soonest) return holdBack(throttle, soonest.lane.key, items.splice(0), soonest.at);
      // Every address has sent its warm-up cap here today: the rest waits for the next day, unattempted.
      const until = this.deps.warmup!.nextDay(now);
      return items.splice(0).map((item) => ({ id: item.recipient.id, until }));
    }
    return [];
  }

  /** A warming lane's room for this fill (none reserved: none); undefined when its address is not warming. */
  private warmRoom(lane: Lane, now: number): Room | undefined {
    const ip = lane.need?.sticky;
    const { warmup } = this.deps;
    if (!ip || !warmup || warmup.capOf(ip, now) === null) return undefined;
    return this.rooms.get(lane.key) ?? { ip, destination: '', left: 0 };
  }

  /** The pool's next connection starts at the address after this one. */
  private advance(lane: Lane): void {
    const need = lane.need;
    if (!need) return;
    const at = need.pool.addresses.findIndex((a) => a.ip === need.sticky);
    this.turn.set(need.pool.name, at + 1);
  }
}
