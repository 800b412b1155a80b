import type {
  AttemptBatch,
  AttemptRecord,
  AttemptView,
  ClaimRoom,
  Endpoint,
  FanOutPos,
  OutboxEvent,
  StoredDelivery,
} from './model.js';

/** What an update of an endpoint may change. */
export interface EndpointChanges {
  url?: string;
  events?: string[] | null;
  description?: string;
  enabled?: { on: true } | { on: false; reason: string };
}

// The webhooks' part of the store (store.ts): endpoints, test events and replays, the
// dispatcher's claims and attempts, and the fan-out under its lease.

export interface WebhookStore {
  createEndpoint(input: {
    customerId: number;
    url: string;
    events: string[] | null;
    description: string;
    secret: string;
    now: number;
  }): Promise<Endpoint>;
  getEndpoint(id: string, customerId?: number): Promise<Endpoint | undefined>;
  listEndpoints(customerId?: number): Promise<Endpoint[]>;
  deleteEndpoint(id: string): Promise<void>;
  /** Changes what is given (events null: every type; enabled false with its reason); the endpoint as it now is. */
  updateEndpoint(id: string, changes: EndpointChanges): Promise<Endpoint | undefined>;
  /** A new secret; the one it replaces goes on signing beside it until `previousUntil`. */
  rotateSecret(id: string, secret: string, previousUntil: number): Promise<Endpoint | undefined>;
  disableEndpoint(id: string, reason: string): Promise<void>;
  enableEndpoint(id: string): Promise<void>;
  eventById(
    id: string,
    customerId: number,
  ): Promise<{ seq: number; id: string; type: string; body: string } | undefined>;
  listAttempts(endpointId: string, limit: number, before?: number): Promise<Array<AttemptView & { cursor: number }>>;
  /** A test event's attempt (no delivery row). */
  logAttempt(a: AttemptRecord): Promise<void>;
  /** A replay: its delivery row, held by the replay itself; then its attempt, logged and settled. */
  startReplay(endpointId: string, eventSeq: number, now: number): Promise<number>;
  finishReplay(a: AttemptRecord, deliveryId: number, state: 'succeeded' | 'failed', now: number): Promise<void>;

  // The dispatcher's.
  enabledEndpointIds(): Promise<string[]>;
  hasDue(endpointIds: string[], now: number): Promise<boolean>;
  /** Gives back `release`, then claims due deliveries within each endpoint's room; undefined: the store is busy, try again soon. */
  claim(
    worker: string,
    now: number,
    room: ClaimRoom,
    release: number[],
    wait: boolean,
  ): Promise<StoredDelivery[] | undefined>;
  unlock(ids: number[]): Promise<void>;
  /** A claimed delivery settled without an attempt (its endpoint was disabled or deleted meanwhile). */
  settleDelivery(
    id: number,
    state: 'succeeded' | 'failed' | 'pending',
    attempts: number,
    nextAt: number | null,
    now: number,
  ): Promise<void>;
  /**
   * False: the batch's fan-out writes were refused, since its epoch no longer holds the fan-out's
   * lease (another node took it over); the attempts were logged and the stored deliveries settled.
   */
  recordAttempts(batch: AttemptBatch): Promise<boolean>;
  /** Unlocks every delivery, whoever holds it (a store no daemon runs on; daemons release dead nodes' claims: NodeStore). */
  releaseAllClaims(): Promise<number>;

  // The fan-out's (webhooks/fanout.ts): one node at a time, under a lease; events in fan-out order, by position.
  /**
   * Takes the fan-out's lease for `holder`, or renews it, for `ttlMs` on the database's clock:
   * the epoch it holds it with, or null while another holder's lease runs. The epoch changes
   * whenever the holder does. SQLite: one process, always epoch 1.
   */
  leadFanOut(holder: string, ttlMs: number): Promise<number | null>;
  /** Gives the lease up, so another node takes it at once (at stop). */
  resignFanOut(holder: string): Promise<void>;
  fanOutCursor(): Promise<FanOutPos>;
  /** The last event after `after` that has a delivery row (rows written before a crash, past the cursor); `after` when none. */
  lastFannedOut(after: FanOutPos): Promise<FanOutPos>;
  /** Events after `pos` in fan-out order, at most `limit`, only of transactions every reader sees as finished. */
  eventsAfter(pos: FanOutPos, limit: number): Promise<OutboxEvent[]>;
  hasDelivery(eventSeq: number, endpointId: string): Promise<boolean>;
}
