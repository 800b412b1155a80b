import pg from 'pg';
import tap, { type Test } from 'tap';
import type { QuotaLimits } from '../../../src/domain/quotas.js';
import type { SendInput } from '../../../src/store/model.js';
import { openDb } from '../../../src/store/sqlite/db.js';
import { sqliteStore } from '../../../src/store/sqlite/index.js';
import { GroupCommit } from '../../../src/store/sqlite/writer/group-commit.js';
import type { Store } from '../../../src/store/store.js';
import { tempDir } from '../../helpers/env.js';
import { freshStore, sender } from '../../helpers/stores.js';

// A send quota is judged and counted in the transaction that accepts the send (docs/operations.md,
// "Send quotas"): with quotas in effect, a send costs the store no more round trips than without.
// Counted for real, sends one after another so none shares another's: on PostgreSQL the
// statements the driver sends to the server (every pg client's query), on SQLite the writer
// thread's transactions and jobs (store/sqlite/writer/group-commit.ts), as the daemon runs it.

const N = 20;
const NOW = Date.UTC(2026, 10, 28, 12, 0, 0);
const HIGH: QuotaLimits = [100_000_000, 1_000_000_000, 1_000_000_000];

/** How sends are counted on an engine: what `measure` saw while `fn` ran. */
type Counter = <T>(fn: () => Promise<T>) => Promise<{ roundTrips: number; transactions: number }>;

/**
 * Every statement any pg client in this process sends while `fn` runs (BEGIN and COMMIT count:
 * they are round trips too), and the transactions they make: each BEGIN, and each statement
 * outside one.
 */
const pgCounter: Counter = async (fn) => {
  const original = pg.Client.prototype.query;
  const inTx = new WeakSet<pg.Client>();
  let roundTrips = 0;
  let transactions = 0;
  // biome-ignore lint/suspicious/noExplicitAny: the driver's query has many overloads; counted and passed on as is.
  pg.Client.prototype.query = function (this: pg.Client, ...args: any[]) {
    roundTrips++;
    const text = String(typeof args[0] === 'string' ? args[0] : args[0]?.text)
      .trim()
      .toUpperCase();
    if (text.startsWith('BEGIN')) {
      inTx.add(this);
      transactions++;
    } else if (text.startsWith('COMMIT') || text.startsWith('ROLLBACK')) inTx.delete(this);
    else if (!inTx.has(this)) transactions++;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    await fn();
  } finally {
    pg.Client.prototype.query = original;
  }
  return { roundTrips, transactions };
};

/** A SQLite store as the daemon opens it: writes through the writer thread's group commit. */
async function sqliteWithWriter(t: Test): Promise<{ store: Store; counter: Counter }> {
  const dir = tempDir();
  const db = openDb(dir.path);
  const writer = new GroupCommit(db.path);
  const store = sqliteStore(db, writer);
  t.teardown(async () => {
    await store.admin.close();
    dir.remove();
  });
  await store.admin.migrate(NOW);
  await store.customers.ensureDefault(NOW);
  const counter: Counter = async (fn) => {
    const [batches, jobs] = [writer.batches, writer.jobs];
    await fn();
    return { roundTrips: writer.jobs - jobs, transactions: writer.batches - batches };
  };
  return { store, counter };
}

let serial = 0;
/** N sends of one recipient each, one after the other, with the server's default quotas `defaults` (the auth epoch read before). */
async function sendN(
  s: Store,
  who: { customerId: number; keyId: string; authEpoch: string },
  defaults?: QuotaLimits,
): Promise<void> {
  const { authEpoch } = who;
  for (let i = 0; i < N; i++) {
    const n = ++serial;
    const input: SendInput = {
      customerId: who.customerId,
      apiKeyId: who.keyId,
      sandbox: false,
      messageId: `rt${n}@example.com`,
      fromHeader: 'shop@example.com',
      senderDomain: 'example.com',
      subject: 's',
      metadata: {},
      request: '{}',
      recipients: [{ address: `r${n}@x.example`, domain: 'x.example', field: 'to' }],
      now: NOW + n,
      authEpoch,
      ...(defaults ? { quotas: defaults } : {}),
    };
    const r = await s.messages.accept(input);
    if (r.kind !== 'accepted') throw new Error(`send ${n}: ${r.kind}`);
  }
}

for (const engine of ['sqlite', 'postgres'] as const)
  tap.test(
    `${engine}: a send with quotas in effect costs the store no more round trips than one without`,
    async (t) => {
      const { store: s, counter } =
        engine === 'sqlite'
          ? await sqliteWithWriter(t)
          : { store: await freshStore(t, engine, NOW), counter: pgCounter };
      const who = { ...(await sender(s, 'example.com', NOW)), authEpoch: await s.keys.authEpoch() };
      await sendN(s, who); // connections opened, statements prepared, before anything is counted
      const off = await counter(() => sendN(s, who));
      t.ok(
        await s.customers.setQuotas(who.customerId, { perMinute: HIGH[0], perDay: HIGH[1], perMonth: HIGH[2] }),
        "the customer's own quotas set",
      );
      const own = await counter(() => sendN(s, who));
      await s.customers.setQuotas(who.customerId, { perMinute: null, perDay: null, perMonth: null });
      const defaults = await counter(() => sendN(s, who, HIGH));
      t.comment(
        `${engine}, per ${N} sends: no quota ${JSON.stringify(off)}, own ${JSON.stringify(own)}, default ${JSON.stringify(defaults)}`,
      );
      t.same(own, off, "the customer's own quotas: the same round trips and transactions");
      t.same(defaults, off, "the server's default quotas: the same round trips and transactions");
      t.equal(off.transactions, N, 'one transaction a send');
      t.same((await s.customers.quotaUse(who.customerId, NOW + serial)).live[2], 4 * N, 'and every send counted');
    },
  );
