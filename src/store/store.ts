import type { KeyGrant } from '../domain/key-scopes.js';
import type { DeliveryStore } from './delivery-store.js';
import type {
  ApiKeyInfo,
  Customer,
  CustomerPools,
  CustomerPoolsChange,
  CustomerQuotas,
  DmarcCounts,
  DmarcDaySource,
  DmarcKept,
  DmarcMailInput,
  DmarcSummaryQuery,
  DomainRow,
  InboundRow,
  KeyKind,
  LimitCheck,
  MessageSearch,
  MessageSummary,
  MessageView,
  QuotaUse,
  ReceivingDomain,
  SendingDomain,
  SimulatedSuppression,
  StoredContent,
  SuppressionReason,
  SuppressionRow,
} from './model.js';
import type { QueueStore } from './queue-store.js';
import type { ReputationStore } from './reputation-store.js';
import type { WebhookStore } from './webhook-store.js';

export type { AttemptOutcome, DeliveryStore, GroupRecord, OwnUse, SharedUse } from './delivery-store.js';
export { comparePos, type FanOutPos } from './model.js';
export type { QueueStore } from './queue-store.js';
export type { ReputationStore, Standing, StandingChange } from './reputation-store.js';
export type { EndpointChanges, WebhookStore } from './webhook-store.js';

import type { EventEnvelope } from '../domain/events.js';
import type { Reply } from '../domain/outcome.js';
import type { UnsubscribeMethod, UnsubscribeResult } from '../domain/unsubscribe.js';
import type {
  BatchInput,
  BatchResult,
  DomainEventType,
  MessageHookDelivery,
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
  VerificationInput,
} from './model.js';

/**
 * The store as every part above it sees it: one asynchronous interface, coarse-grained (one
 * method per unit of work that must be one transaction), with two engines behind it
 * (docs/architecture.md, "The store"): SQLite, embedded and the default, synchronous inside with
 * the writer thread's group commit; PostgreSQL, for several nodes on one database. Nothing above
 * the store sees a driver, its types or its error codes: a store that cannot be reached or
 * cannot write throws a StoreUnavailable (store/errors.ts).
 *
 * Methods are grouped by aggregate, each part a module of the same name in both engines. Times
 * are milliseconds since the epoch, passed in (the clock is the caller's).
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
  queue: QueueStore;
  reputation: ReputationStore;
  dmarc: DmarcStore;
  tlsReports: import('./tls-report-store.js').TlsReportStore;
  warmup: import('./warmup-store.js').WarmupStore;
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
   * lost, or never made, is opened again, by itself, and `events` hears of each loss, each failed
   * attempt and the return.
   */
  listen(self: string, on: (kind: WakeupKind) => void, events?: WakeupEvents): Promise<{ close(): Promise<void> }>;
}

/** What a node's listening connection reports, for the log (daemon/loops.ts). */
export interface WakeupEvents {
  /** Down: lost or never made (`attempt` 0), or reopening attempt `attempt` failed; next try in `inMs` (doubling). */
  lost?: (e: Error, retry: { attempt: number; inMs: number }) => void;
  /** Open and listening again, after `attempts` failed attempts. */
  back?: (attempts: number) => void;
}

/**
 * The daemons on the store (docs/cluster.md): each registers with a fresh id, the worker its
 * claims carry, and heartbeats by the store's clock (PostgreSQL's, shared by every node; on
 * SQLite the machine's). A node whose last heartbeat is older than its lease is dead; releasing
 * removes dead nodes' rows and frees every claim whose worker has no row left (recipients and
 * webhook deliveries), never a live node's.
 */
export interface NodeStore {
  /**
   * A node starts: registered unless a live node (its heartbeat within its lease) already goes by
   * its name, decided in one transaction that two nodes of one name starting at once cannot both
   * pass; null when registered, else that live node. `exclusive`: the caller holds the store alone
   * (SQLite's lock), so rows a previous run left are removed first.
   */
  register(node: NodeInfo, exclusive: boolean): Promise<NodeView | null>;
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
  /** The customer's own send quotas; undefined: no such customer. */
  quotas(id: number): Promise<CustomerQuotas | undefined>;
  /** Sets those given (null: back to the server's default); false: no such customer. */
  setQuotas(id: number, quotas: Partial<CustomerQuotas>): Promise<boolean>;
  /** Recipients accepted in each current quota window (domain/quotas.ts). */
  quotaUse(id: number, now: number): Promise<QuotaUse>;
  /** Whether the customer's mail carries the List-Unsubscribe fields by default (`customers set --unsubscribe`). */
  unsubscribeDefault(id: number): Promise<boolean>;
  setUnsubscribeDefault(id: number, on: boolean): Promise<void>;
  /** Every customer's pools, by customer id (a customer with neither a default nor allowed pools is left out). */
  pools(): Promise<Map<number, CustomerPools>>;
  /** Changes a customer's pools (the caller checked the names against the configuration); answers them as they now stand. */
  setPools(id: number, change: CustomerPoolsChange): Promise<CustomerPools>;
}

export interface KeyStore {
  create(input: {
    customerId: number;
    kind: KeyKind;
    name: string;
    /** Its scopes and restrictions (domain/key-scopes.ts): always chosen, never a default. */
    grant: KeyGrant;
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
  /**
   * What a verification found, written with its event in one transaction: verified keeps the first
   * verification time; when the domain's state changes, `domain.verified` or
   * `domain.verification_failed` is written with `records` in its data. The event written, or null.
   */
  setVerification(id: number, input: VerificationInput): Promise<DomainEventType | null>;
  /** Records the return-path host found holding (null: it does not); the envelope sender follows it. */
  setReturnPath(id: number, host: string | null): Promise<void>;
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
  /**
   * A recipient's unsubscribe (the recipient row a token named): its address suppressed for its
   * customer (reason `unsubscribe`) and `recipient.unsubscribed` fired, in one transaction; an
   * address already suppressed changes nothing and fires nothing.
   */
  unsubscribe(recipientId: number, method: UnsubscribeMethod, now: number): Promise<UnsubscribeResult>;
  /** What sandbox keys' simulated bounces and complaints suppressed (never on the list), newest first, for these simulator addresses. */
  simulated(customerId: number, addresses: string[], limit: number): Promise<SimulatedSuppression[]>;
  /**
   * Adds entries already parsed (an address's key, or a domain's, `@example.com`: domain/addresses.ts,
   * parseSuppressionEntry), all in one transaction; for each, whether it was added (false: already there).
   */
  addMany(
    customerId: number,
    entries: Array<{ address: string; reason: SuppressionReason }>,
    now: number,
  ): Promise<boolean[]>;
  /** The whole list in address order, a page after `after` (an address), for an export. */
  page(customerId: number, after: string | undefined, limit: number): Promise<SuppressionRow[]>;
}

export interface MessageStore {
  /** The send path's commit: a 202 only once this resolves (the message and its recipients are durable). */
  accept(input: SendInput): Promise<SendCommit>;
  acceptBatch(input: BatchInput): Promise<BatchResult>;
  get(customerId: number | undefined, messageId: string): Promise<MessageView | undefined>;
  list(opts: { customerId?: number; state?: string; limit: number; before?: number }): Promise<MessageSummary[]>;
  search(s: MessageSearch): Promise<MessageSummary[]>;
  deliveriesOf(messageRowId: number): Promise<MessageHookDelivery[]>;
  events(messageRowId: number): Promise<EventEnvelope[]>;
  /** A message's request as accepted and its composed copy while kept, for the dashboard's content view. */
  content(customerId: number, messageId: string): Promise<StoredContent | undefined>;
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

/** DMARC aggregate reports received (store/model/dmarc.ts). */
export interface DmarcStore {
  /** One mail's reports kept in one transaction; a report received before (its org and report id) is not kept twice. */
  keep(input: DmarcMailInput): Promise<DmarcKept>;
  /** What receivers reported for a domain, per day and source address. */
  summary(q: DmarcSummaryQuery): Promise<DmarcDaySource[]>;
  counts(): Promise<DmarcCounts>;
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
