import type {
  ApiKeyInfo,
  AttemptBatch,
  AttemptRecord,
  AttemptView,
  Claimed,
  ClaimRoom,
  Customer,
  DomainRow,
  Endpoint,
  FanOutPos,
  InboundRow,
  KeyKind,
  LimitCheck,
  MessageSearch,
  MessageSummary,
  MessageView,
  OutboxEvent,
  QueuedMessage,
  ReceivingDomain,
  SendingDomain,
  SimulatedSuppression,
  StoredContent,
  StoredDelivery,
  SuppressionReason,
  SuppressionRow,
} from './model.js';
import type { DestinationThrottle } from './sqlite/destinations.js';

export { comparePos, type FanOutPos } from './model.js';

import type { EventEnvelope } from '../domain/events.js';
import type { Outcome, Reply } from '../domain/outcome.js';
import type { SandboxStep } from '../domain/sandbox.js';
import type { OutcomePolicy } from '../domain/transitions.js';
import type {
  BatchInput,
  BatchResult,
  NodeInfo,
  NodeView,
  Overview,
  ReceiveInput,
  Released,
  Role,
  SendCommit,
  SendInput,
  Session,
  Status,
  User,
} from './model.js';

/**
 * The store as every part above it sees it: one asynchronous interface, coarse-grained (one
 * method per unit of work that must be one transaction), with two engines behind it
 * (docs/architecture.md, "The store"): SQLite, embedded and the default, synchronous inside with
 * the writer thread's group commit; PostgreSQL, for several nodes on one database. Nothing above
 * the store sees a driver, its types or its error codes: a store that cannot be reached or
 * cannot write throws a StoreUnavailable (store/errors.ts).
 *
 * Methods are grouped by aggregate, as the modules of the SQLite engine are. Times are
 * milliseconds since the epoch, passed in (the clock is the caller's).
 */
export interface Store {
  readonly engine: 'sqlite' | 'postgres';
  /** Where it is, for messages (a file path, or the URL without its password). */
  readonly location: string;

  admin: AdminStore;
  customers: CustomerStore;
  keys: KeyStore;
  domains: DomainStore;
  suppressions: SuppressionStore;
  messages: MessageStore;
  delivery: DeliveryStore;
  inbound: InboundStore;
  webhooks: WebhookStore;
  users: UserStore;
  nodes: NodeStore;
  wakeups: WakeupStore;
}

/** Work a node tells the others of: recipients queued (outbound), events written (webhooks). */
export type WakeupKind = 'outbound' | 'webhooks';

/**
 * Wakeups between nodes: a node that committed work says so, and the others look at once rather
 * than at their next poll (PostgreSQL: LISTEN/NOTIFY; SQLite, one process: nothing to say).
 */
export interface WakeupStore {
  /** After the commit that queued the work: tells the other nodes (sent soon, together with others; never fails). */
  notify(from: string, kind: WakeupKind): void;
  /**
   * Hears the other nodes until closed: `on` for each kind another node told of, and for each
   * kind when a lost connection is back (what was said meanwhile was not heard). A connection
   * lost is opened again, by itself.
   */
  listen(
    self: string,
    on: (kind: WakeupKind) => void,
    events?: { lost?: (e: Error) => void; back?: () => void },
  ): Promise<{ close(): Promise<void> }>;
}

/**
 * The daemons on the store (docs/cluster.md): each registers with a fresh id, the worker its
 * claims carry, and heartbeats by the store's clock (PostgreSQL's, shared by every node; on
 * SQLite the machine's). A node whose last heartbeat is older than its lease is dead; releasing
 * removes dead nodes' rows and frees every claim whose worker has no row left (recipients and
 * webhook deliveries), never a live node's.
 */
export interface NodeStore {
  /** A node starts. `exclusive`: the caller holds the store alone (SQLite's lock), so rows a previous run left are removed. */
  register(node: NodeInfo, exclusive: boolean): Promise<void>;
  /** The heartbeat; false when the node's row was gone (it had been found dead and its claims released) and has been written again. */
  heartbeat(node: NodeInfo): Promise<boolean>;
  /** The live nodes, by name, with the claims each holds. */
  list(): Promise<NodeView[]>;
  /** Removes dead nodes and frees the claims of workers that are no live node. */
  releaseDead(): Promise<Released>;
  /** A node stopping cleanly: its claims freed and its row removed. */
  leave(id: string): Promise<Omit<Released, 'nodes'>>;
}

export interface AdminStore {
  /** Applies pending migrations (safe when several processes start at once); the versions applied. */
  migrate(now: number): Promise<number[]>;
  schemaVersions(): Promise<number[]>;
  /** A random secret created on first use and kept in the store (e.g. the return-path token key). */
  secret(name: string, bytes?: number): Promise<Buffer>;
  /** The health check's write: resolves when the store takes a write now. */
  touchHealth(now: number): Promise<void>;
  status(now: number): Promise<Status>;
  countsByState(table: 'recipients' | 'webhook_deliveries'): Promise<Record<string, number>>;
  /** When the oldest recipient still to be sent (queued or deferred, and due) became due; null when none. */
  oldestQueuedAt(now: number): Promise<number | null>;
  overview(customerId: number, now: number): Promise<Overview>;
  /** An online copy of the store into `file` (SQLite); PostgreSQL refuses, naming pg_dump. */
  backup(file: string): Promise<void>;
  /** Retention: bodies of finished messages and attempt logs older than `days`. */
  purgeOld(now: number, days: number): Promise<{ messages: number; attempts: number }>;
  /**
   * Whether this node runs the scheduled job `name` now: the first of the nodes whose schedules
   * fire together claims it, and none can again within `gapMs` (the database's clock; SQLite, one
   * process: always).
   */
  claimJob(name: string, gapMs: number): Promise<boolean>;
  /** limits.max_store_bytes (SQLite; PostgreSQL has no such cap and ignores it). */
  setMaxBytes(bytes: number): void;
  /** What an administrator should hear at start about how the store is set up (PostgreSQL: a commit that is not durable). */
  checks(): Promise<string[]>;
  /** Stops taking writes, lets those submitted commit, closes connections. */
  close(): Promise<void>;
}

export interface CustomerStore {
  ensureDefault(now: number): Promise<void>;
  add(name: string, now: number): Promise<Customer>;
  find(name: string): Promise<Customer | undefined>;
  byId(id: number): Promise<Customer | undefined>;
  list(): Promise<Customer[]>;
  counts(id: number): Promise<{ keys: number; domains: number; messages: number }>;
}

export interface KeyStore {
  create(input: {
    customerId: number;
    kind: KeyKind;
    name: string;
    now: number;
  }): Promise<ApiKeyInfo & { key: string }>;
  /** The key's row if the presented key is well-formed, known and not revoked (constant-time compare). */
  authenticate(presented: string): Promise<ApiKeyInfo | undefined>;
  list(customerId?: number): Promise<ApiKeyInfo[]>;
  get(id: string, customerId: number): Promise<ApiKeyInfo | undefined>;
  /** False if there is no such key; revoking twice is true. Moves the auth epoch. */
  revoke(id: string, now: number): Promise<boolean>;
  /** Moves (from any process) whenever a key or a domain changes: the API's cache is dropped then. */
  authEpoch(): Promise<string>;
}

export interface DomainStore {
  add(input: { customerId: number; name: string; receiving: boolean; now: number }): Promise<DomainRow>;
  find(name: string): Promise<DomainRow | undefined>;
  /** The columns the accept path needs (not the DKIM key). */
  findSending(name: string): Promise<SendingDomain | undefined>;
  list(customerId?: number): Promise<DomainRow[]>;
  setVerified(id: number, at: number | null): Promise<void>;
  setReceiving(id: number, on: boolean): Promise<void>;
  remove(id: number): Promise<void>;
  rotateDkim(id: number, now: number): Promise<DomainRow>;
  switchDkim(id: number, now: number): Promise<void>;
  receiving(name: string): Promise<ReceivingDomain | undefined>;
  inboundLimits(id: number): Promise<{ ratePerMinute: number | null; monthlyLimit: number | null }>;
  setInboundLimits(id: number, limits: { ratePerMinute?: number | null; monthlyLimit?: number | null }): Promise<void>;
}

export interface SuppressionStore {
  /** The suppressed addresses among these (keyed by addressKey), with their reasons. */
  find(customerId: number, addresses: string[]): Promise<Map<string, SuppressionReason>>;
  add(input: {
    customerId: number;
    address: string;
    reason: SuppressionReason;
    messageRowId?: number;
    now: number;
  }): Promise<boolean>;
  list(customerId: number, opts: { limit: number; before?: number; reason?: string }): Promise<SuppressionRow[]>;
  remove(customerId: number, address: string): Promise<boolean>;
  search(customerId: number, prefix: string, limit: number): Promise<SuppressionRow[]>;
  /** What sandbox keys' simulated bounces and complaints suppressed (never on the list), newest first, for these simulator addresses. */
  simulated(customerId: number, addresses: string[], limit: number): Promise<SimulatedSuppression[]>;
}

export type CancelResult =
  | { kind: 'canceled' }
  | { kind: 'not_found' }
  | { kind: 'too_late'; states: Record<string, number> };

export interface MessageStore {
  /** The send path's commit: a 202 only once this resolves (the message and its recipients are durable). */
  accept(input: SendInput): Promise<SendCommit>;
  acceptBatch(input: BatchInput): Promise<BatchResult>;
  get(customerId: number | undefined, messageId: string): Promise<MessageView | undefined>;
  list(opts: { customerId?: number; state?: string; limit: number; before?: number }): Promise<MessageSummary[]>;
  search(s: MessageSearch): Promise<MessageSummary[]>;
  cancel(customerId: number | undefined, messageId: string, now: number): Promise<CancelResult>;
  deliveriesOf(
    messageRowId: number,
  ): Promise<
    Array<{ event_id: string; type: string; endpoint_id: string; state: string; attempts: number; updated_at: number }>
  >;
  events(messageRowId: number): Promise<EventEnvelope[]>;
  /** A message's request as accepted and its composed copy while kept, for the dashboard's content view. */
  content(customerId: number, messageId: string): Promise<StoredContent | undefined>;
}

/** One recipient's attempt and what came of it. */
export interface AttemptOutcome {
  message: QueuedMessage;
  recipient: Claimed;
  outcome: Outcome;
}

/** What one delivery group writes, in one transaction. */
export interface GroupRecord {
  results: AttemptOutcome[];
  /** Composed copies by message row id: kept while a recipient of the message may still be retried. */
  composed: Map<number, Buffer>;
  /** Recipients held back without an attempt, until when (claims released). */
  postpone: Array<{ id: number; until: number }>;
  policy: OutcomePolicy;
  now: number;
}

export interface DeliveryStore {
  /** Claims up to `limit` due recipients for `worker`, earliest due first, with their messages. */
  claim(worker: string, now: number, limit: number): Promise<Array<{ recipient: Claimed; message: QueuedMessage }>>;
  record(group: GroupRecord): Promise<void>;
  /** Sandbox recipients: the simulator's steps for each, recorded in one transaction. */
  recordSandbox(
    items: Array<{ message: QueuedMessage; recipient: Claimed; steps: SandboxStep[] }>,
    policy: OutcomePolicy,
    now: number,
  ): Promise<void>;
  /** Holds claimed recipients back until the given times (claims released; state untouched). */
  postpone(items: ReadonlyArray<{ id: number; until: number }>): Promise<void>;
  releaseClaims(ids: number[]): Promise<void>;
  /** Releases every claim, whoever holds it (a store no daemon runs on; daemons release dead nodes' claims: NodeStore). */
  releaseAllClaims(): Promise<number>;
  /**
   * A destination's throttling as it now stands for `holder` (kept so a restart does not hammer a
   * destination that asked us to wait); the caller writes one at a time, in order. The holder is
   * a node's name (limits per node: each node's backoff is its own, and survives its restart) or
   * CLUSTER_THROTTLE (limits_scope = "cluster"). The SQLite engine is one node: it keeps one
   * throttling per destination, whoever the holder.
   */
  setThrottle(
    change: { kind: 'set'; record: DestinationThrottle } | { kind: 'cleared'; destination: string },
    now: number,
    holder: string,
  ): Promise<void>;
  /** The throttled destinations of `holder`; without one, of every holder. */
  throttles(holder?: string): Promise<DestinationThrottle[]>;

  // outbound.limits_scope = "cluster" (outbound/throttle.ts): a destination's limits shared by the nodes.
  /**
   * Runs `decide` with the destination's use by the other live nodes and its shared throttling
   * (undefined: nothing is shared, one process), and stores the use it answers as this node's;
   * no other node's `shareDestination` for the destination runs in between.
   */
  shareDestination(destination: string, node: string, decide: (others: SharedUse) => OwnUse): Promise<void>;
  /** This node is alive: its use keeps counting; the use of nodes silent for a minute is removed. */
  touchUse(node: string): Promise<void>;
}

/** What the other live nodes use of a destination: connections open, messages started in `minute` (epoch ms / 60,000). */
export interface SharedUse {
  open: number;
  minute: number;
  started: number;
  throttle: DestinationThrottle | null | undefined;
}

export interface OwnUse {
  open: number;
  minute: number;
  started: number;
}

export interface InboundStore {
  /** One received message: stored per customer, and the report it is applied; the ids stored. */
  receive(input: ReceiveInput): Promise<string[]>;
  checkLimits(
    d: ReceivingDomain,
    defaults: { ratePerMinute: number; monthlyLimit: number },
    now: number,
  ): Promise<LimitCheck>;
  /** `inbound.limited`, at most once per domain and hour; true when it fired. */
  recordLimited(d: ReceivingDomain, limit: 'rate' | 'monthly', windowEndsAt: number, now: number): Promise<boolean>;
  get(id: string, customerId?: number): Promise<InboundRow | undefined>;
  size(id: string, customerId: number): Promise<number | undefined>;
  list(opts: { customerId?: number; limit: number; before?: number }): Promise<Array<Omit<InboundRow, 'raw'>>>;
}

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

export interface UserStore {
  add(input: {
    email: string;
    passwordHash: string;
    role: Role;
    customerId: number | null;
    now: number;
  }): Promise<User>;
  find(email: string): Promise<(User & { password_hash: string }) | undefined>;
  list(): Promise<Array<User & { customer: string | null }>>;
  remove(email: string): Promise<boolean>;
  setPassword(email: string, passwordHash: string): Promise<boolean>;
  createSession(user: User, customerId: number, now: number): Promise<{ id: string; csrf: string }>;
  useSession(id: string, now: number, idleMs: number): Promise<Session | undefined>;
  showCustomer(id: string, customerId: number): Promise<void>;
  endSession(id: string): Promise<void>;
  purgeSessions(now: number, idleMs: number): Promise<number>;
  /**
   * The dashboard's failed logins, shared by every node (PostgreSQL); absent where the dashboard
   * is one process (SQLite), which counts them in memory (dashboard/throttle.ts).
   */
  loginFailures?: LoginFailureStore;
}

/** Failed logins by key (an account, a client address), each a time in ms. */
export interface LoginFailureStore {
  /** The failures of these keys since `since`, oldest first. */
  recent(keys: string[], since: number): Promise<Array<{ key: string; at: number }>>;
  /** One failure for each key at `now`; failures older than `windowMs` are forgotten. */
  record(keys: string[], now: number, windowMs: number): Promise<void>;
  clear(key: string): Promise<void>;
}

export type { Reply };
