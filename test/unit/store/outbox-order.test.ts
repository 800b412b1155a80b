import pg from 'pg';
import t from 'tap';
import { pgStore } from '../../../src/store/pg/index.js';
import type { FanOutPos } from '../../../src/store/store.js';
import { startPgCluster } from '../../../support/postgres.js';

// On PostgreSQL, transactions take sequence numbers when they insert and commit in any order: a
// fan-out that reads `seq > cursor` and moves its cursor past what it read loses an event whose
// transaction was still open. Two real connections show the loss, then that the store's read
// (by writing transaction, only of transactions older than every one running) keeps it.

t.test(
  'postgres: an event whose transaction commits after a later one is lost to a seq cursor and kept by the fan-out',
  async (t) => {
    // A server of its own: the watermark is the server's (its oldest running transaction, whatever
    // the database), and the run's shared server has other tests' transactions open.
    const cluster = await startPgCluster();
    t.teardown(() => cluster.remove());
    const url = cluster.url;
    const store = pgStore(url, { max: 2 });
    t.teardown(() => store.admin.close());
    await store.admin.migrate(1);
    await store.customers.ensureDefault(1);
    const a = new pg.Client({ connectionString: url });
    const b = new pg.Client({ connectionString: url });
    await a.connect();
    await b.connect();
    t.teardown(async () => {
      await a.end();
      await b.end();
    });
    const insert = (c: pg.Client, id: string) =>
      c.query(
        "INSERT INTO events (id, customer_id, type, created_at, body) VALUES ($1, 1, 'email.delivered', 1, '{}')",
        [id],
      );
    const seqAfter = async (cursor: number) =>
      (await b.query('SELECT seq, id FROM events WHERE seq > $1 ORDER BY seq', [cursor])).rows.map(
        (r) => r.id as string,
      );

    // The naive reader: A takes seq 1 and stays open, B takes seq 2 and commits.
    await a.query('BEGIN');
    await insert(a, 'first');
    await insert(b, 'second');
    t.same(await seqAfter(0), ['second'], 'a seq reader sees the later event first');
    const naive = Number((await b.query("SELECT seq FROM events WHERE id = 'second'")).rows[0].seq);
    const ours = await store.webhooks.eventsAfter({ x: 0, seq: 0 }, 10);
    t.same(ours, [], 'the fan-out sees neither while the earlier transaction is open: the later one may not go first');
    await a.query('COMMIT');
    t.same(await seqAfter(naive), [], 'and having moved past seq 2, never sees seq 1: lost');
    const read = await store.webhooks.eventsAfter({ x: 0, seq: 0 }, 10);
    t.same(
      read.map((e) => e.id),
      ['first', 'second'],
      'the fan-out reads both, in the order their transactions began writing',
    );
    const cursor: FanOutPos = read.at(-1)!.pos;

    // Now the other way round: A takes its transaction id first, B inserts and commits, then A inserts.
    await a.query('BEGIN');
    await a.query('SELECT pg_current_xact_id()');
    await insert(b, 'third');
    t.same(await store.webhooks.eventsAfter(cursor, 10), [], 'held back while an older transaction is open');
    await insert(a, 'fourth');
    await a.query('COMMIT');
    const next = await store.webhooks.eventsAfter(cursor, 10);
    t.same(
      next.map((e) => e.id),
      ['fourth', 'third'],
      'both, by transaction: none skipped',
    );
    t.same(await store.webhooks.eventsAfter(next.at(-1)!.pos, 10), [], 'and nothing twice');
  },
);
