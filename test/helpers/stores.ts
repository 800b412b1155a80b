import pg from 'pg';
import tap, { type Test } from 'tap';
import { fullGrant } from '../../src/domain/key-scopes.js';
import type { OutboxEvent } from '../../src/store/model.js';
import { pgStore } from '../../src/store/pg/index.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { sqliteStore } from '../../src/store/sqlite/index.js';
import type { FanOutPos, Store } from '../../src/store/store.js';
import { testDatabase } from '../../support/postgres.js';
import { tempDir } from './env.js';

/** Each fresh store's own way to run a statement behind the interface (tests that set a row up by hand: a heartbeat in the past). */
const raw = new WeakMap<Store, (sql: string, values: unknown[]) => Promise<void>>();

/**
 * Runs one statement on a fresh store's database, outside the store interface. Placeholders are
 * `?` and are written $1, $2… for PostgreSQL.
 */
export async function rawRun(store: Store, sql: string, values: unknown[] = []): Promise<void> {
  const run = raw.get(store);
  if (!run) throw new Error('rawRun: not a store made by freshStore');
  await run(sql, values);
}

/** The store engines every contract test runs against. */
export const ENGINES = ['sqlite', 'postgres'] as const;
export type Engine = (typeof ENGINES)[number];

/**
 * A fresh, migrated store of the given engine with the default customer: SQLite in a temporary
 * directory, PostgreSQL in a database of its own on the run's cluster (support/postgres.ts);
 * closed and removed at teardown.
 */
export async function freshStore(
  t: { teardown(fn: () => unknown): void },
  engine: Engine,
  now = Date.now(),
): Promise<Store> {
  let store: Store;
  if (engine === 'sqlite') {
    const dir = tempDir();
    const db = openDb(dir.path);
    store = sqliteStore(db);
    raw.set(store, async (sql, values) => void db.sqlite.prepare(sql).run(...values));
    t.teardown(async () => {
      await store.admin.close();
      dir.remove();
    });
  } else {
    const url = await testDatabase(t);
    store = pgStore(url, { max: 4 });
    raw.set(store, async (sql, values) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      let n = 0;
      try {
        await c.query(
          sql.replace(/\?/g, () => `$${++n}`),
          values,
        );
      } finally {
        await c.end();
      }
    });
    t.teardown(() => store.admin.close());
  }
  await store.admin.migrate(now);
  await store.customers.ensureDefault(now);
  return store;
}

/** Registers one test per engine: `contract('x', fn)` runs fn against a fresh store of each. */
export function contract(
  name: string,
  fn: (t: Test, s: Store, engine: Engine) => Promise<void>,
  now = 1_000_000,
): void {
  for (const engine of ENGINES)
    tap.test(`${engine}: ${name}`, async (t) => fn(t, await freshStore(t, engine, now), engine));
}

/** The default customer, a production key and a verified domain: what a send needs. */
export async function sender(
  s: Store,
  domain = 'example.com',
  now = 1_000_000,
): Promise<{ customerId: number; keyId: string; key: string; domainId: number }> {
  const c = (await s.customers.find('default'))!;
  const k = await s.keys.create({ grant: fullGrant(), customerId: c.id, kind: 'production', name: 'test', now });
  const d =
    (await s.domains.find(domain)) ?? (await s.domains.add({ customerId: c.id, name: domain, receiving: false, now }));
  await s.domains.setVerified(d.id, now);
  return { customerId: c.id, keyId: k.id, key: k.key, domainId: d.id };
}

let counter = 0;

/** Accepts one message through the send path's commit; its Message-ID, and the result. */
export async function send(
  s: Store,
  who: { customerId: number; keyId: string },
  opts: {
    to?: string[];
    now?: number;
    sandbox?: boolean;
    tags?: string[];
    scheduledAt?: number;
    idempotency?: { key: string; hash: Buffer; ttlMs: number };
    messageId?: string;
    /** The id in the message's Message-ID field when it is the sender's own. */
    headerMessageId?: string;
    /** The pool the sender chose (outbound.pools). */
    pool?: string;
  } = {},
) {
  const now = opts.now ?? 1_000_000;
  const messageId = opts.messageId ?? `m${++counter}.${process.pid}@example.com`;
  const to = opts.to ?? ['bob@example.net'];
  const result = await s.messages.accept({
    customerId: who.customerId,
    apiKeyId: who.keyId,
    sandbox: opts.sandbox ?? false,
    messageId,
    fromHeader: 'Shop <shop@example.com>',
    senderDomain: 'example.com',
    subject: 'Your order',
    metadata: { order: '1' },
    request: JSON.stringify({ from: 'shop@example.com', to, subject: 'Your order', text_body: 'Thanks' }),
    recipients: to.map((address) => ({ address, domain: address.split('@')[1]!, field: 'to' as const })),
    ...(opts.tags ? { tags: opts.tags } : {}),
    ...(opts.headerMessageId !== undefined ? { headerMessageId: opts.headerMessageId } : {}),
    ...(opts.scheduledAt !== undefined ? { scheduledAt: opts.scheduledAt } : {}),
    ...(opts.pool !== undefined ? { pool: opts.pool } : {}),
    ...(opts.idempotency ? { idempotency: opts.idempotency } : {}),
    now,
    authEpoch: await s.keys.authEpoch(),
  });
  return { messageId, result };
}

/**
 * The outbox's events after `after`, once at least `n` are readable. On PostgreSQL the fan-out
 * reads only events of transactions older than every one running on the server, and the run's
 * tests share one server: another test's open transaction holds them back a moment.
 */
export async function readEvents(s: Store, n: number, after?: FanOutPos, limit = 100): Promise<OutboxEvent[]> {
  const from = after ?? (await s.webhooks.fanOutCursor());
  const until = Date.now() + 10_000;
  for (;;) {
    const events = await s.webhooks.eventsAfter(from, limit);
    if (events.length >= n || Date.now() > until) return events;
    await new Promise((r) => setTimeout(r, 20));
  }
}
