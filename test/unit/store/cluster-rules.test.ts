import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { LoginThrottle } from '../../../src/dashboard/throttle.js';
import { fullGrant } from '../../../src/domain/key-scopes.js';
import type { Report } from '../../../src/domain/report.js';
import { returnPath } from '../../../src/domain/return-path.js';
import { AuthCache } from '../../../src/store/auth-cache.js';
import { acceptedResponse } from '../../../src/store/model.js';
import { pgStore } from '../../../src/store/pg/index.js';
import type { Store } from '../../../src/store/store.js';
import { released, twoNodes } from '../../helpers/race.js';
import { send, sender } from '../../helpers/stores.js';

// What must hold for the whole cluster when several nodes share one PostgreSQL, each shown with
// two stores on one database (two nodes' pools) racing for the same thing (test/helpers/race.ts:
// where a race is decided by a lock, both racers are let go once both wait on it).
// PostgreSQL only: a SQLite store is one process (store/open.ts refuses a second), whose writes
// are one at a time.

const hash = (s: string) => createHash('sha256').update(s).digest();

t.test(
  'postgres: one Idempotency-Key posted to two nodes at once sends one message, and both answer its 202',
  async (t) => {
    const n = await twoNodes(t);
    const who = await sender(n.a);
    const idem = { key: 'order-42', hash: hash('the same body'), ttlMs: 86_400_000 };
    // Both read no record, both insert their message, and both wait to insert the key.
    const [x, y] = await released(n, 'LOCK TABLE idempotency_keys IN SHARE ROW EXCLUSIVE MODE', 2, () => [
      send(n.a, who, { idempotency: idem, messageId: 'from-a@example.com' }),
      send(n.b, who, { idempotency: idem, messageId: 'from-b@example.com' }),
    ]);
    const results = [x!, y!];
    const accepted = results.filter((r) => r.result.kind === 'accepted');
    const replayed = results.filter((r) => r.result.kind === 'replay');
    t.equal(accepted.length, 1, 'one node accepts');
    t.equal(replayed.length, 1, 'the other replays');
    const winner = accepted[0]!;
    const body = acceptedResponse({
      messageId: winner.messageId,
      sandbox: false,
      recipients: [{ address: 'bob@example.net', domain: 'example.net', field: 'to' }],
    });
    t.match(
      replayed[0]!.result,
      { kind: 'replay', status: 202, response: body },
      "the replay is the winner's 202, to the byte",
    );
    const rows = (await n.sql.query('SELECT message_id FROM messages')).rows.map((r) => r.message_id as string);
    t.same(rows, [winner.messageId], "one message, the winner's: the other's insert went with its transaction");
    t.equal(
      Number((await n.sql.query('SELECT count(*) FROM recipients')).rows[0].count),
      1,
      'one recipient to deliver',
    );

    // A stale record: both nodes find it, one removes it and sends anew, the other replays that.
    await n.sql.query('UPDATE idempotency_keys SET created_at = 0');
    const [p, q] = await released(n, 'LOCK TABLE idempotency_keys IN SHARE ROW EXCLUSIVE MODE', 2, () => [
      send(n.a, who, { idempotency: idem, messageId: 'again-a@example.com', now: 200_000_000 }),
      send(n.b, who, { idempotency: idem, messageId: 'again-b@example.com', now: 200_000_000 }),
    ]);
    const kinds = [p!.result.kind, q!.result.kind].sort();
    t.same(kinds, ['accepted', 'replay'], 'stale: one new send, one replay of it');
    t.equal(Number((await n.sql.query('SELECT count(*) FROM messages')).rows[0].count), 2, 'one more message');
  },
);

t.test(
  'postgres: a key revoked or a domain removed on one node is refused by the other at its next request',
  async (t) => {
    const n = await twoNodes(t);
    const who = await sender(n.a);
    const cacheA = new AuthCache(n.a);
    const cacheB = new AuthCache(n.b);
    // Both nodes have the key and the domain cached.
    for (const cache of [cacheA, cacheB]) {
      t.equal((await cache.key(who.key))?.id, who.keyId);
      t.ok(await cache.domain('example.com'));
    }
    await n.a.keys.revoke(who.keyId, 2_000_000);
    t.equal(await cacheB.key(who.key), undefined, 'the other node refuses the key at its next checked lookup');
    t.equal(await cacheA.key(who.key), undefined, 'and so does the node that revoked it');

    // The send path looks up unchecked (its cache may be older) and the accept's statement refuses.
    const other = await n.a.keys.create({
      grant: fullGrant(),
      customerId: who.customerId,
      kind: 'production',
      name: 'other',
      now: 2_000_000,
    });
    t.equal((await cacheB.key(other.key, false))?.id, other.id);
    const epochB = cacheB.epoch;
    await n.a.keys.revoke(other.id, 2_000_001);
    t.equal((await cacheB.key(other.key, false))?.id, other.id, 'an unchecked lookup may answer from the cache');
    const sent = await n.b.messages.accept({
      customerId: who.customerId,
      apiKeyId: other.id,
      sandbox: false,
      messageId: 'late@example.com',
      fromHeader: 'shop@example.com',
      senderDomain: 'example.com',
      subject: 's',
      metadata: {},
      request: '{}',
      recipients: [{ address: 'bob@example.net', domain: 'example.net', field: 'to' }],
      now: 2_000_002,
      authEpoch: epochB,
    });
    t.equal(
      sent.kind,
      'key_revoked',
      'but the accept on that node refuses what the other revoked, in the statement that would insert',
    );
    t.not(sent.authEpoch, epochB, 'and answers the epoch it saw');
    cacheB.observe(sent.authEpoch);
    t.equal(await cacheB.key(other.key, false), undefined, 'which drops the cache for the next request');

    const d = (await n.a.domains.find('example.com'))!;
    t.ok(await cacheA.domain('example.com'));
    await n.b.domains.remove(d.id);
    t.equal(
      await cacheA.domain('example.com'),
      undefined,
      'a domain removed on one node is unknown to the other at its next lookup',
    );
  },
);

t.test('postgres: inbound.limited once per domain and hour when two nodes hit the limit at once', async (t) => {
  const n = await twoNodes(t);
  const c = (await n.a.customers.find('default'))!;
  const added = await n.a.domains.add({ customerId: c.id, name: 'in.example', receiving: true, now: 1 });
  const d = (await n.a.domains.receiving(added.name))!;
  const limitedEvents = async () =>
    Number((await n.sql.query("SELECT count(*) FROM events WHERE type = 'inbound.limited'")).rows[0].count);
  // First time (no row yet): both insert; the second waits for the first's row and finds it fresh.
  const first = await released(n, 'LOCK TABLE inbound_limited IN SHARE ROW EXCLUSIVE MODE', 2, () => [
    n.a.inbound.recordLimited(d, 'rate', 60_000, 1000),
    n.b.inbound.recordLimited(d, 'rate', 60_000, 1001),
  ]);
  t.same(first.sort(), [false, true], 'one node records it');
  t.equal(await limitedEvents(), 1, 'one event');
  // An hour on, the row exists: both wait for its lock; the one after finds it moved.
  const later = await released(n, `SELECT 1 FROM inbound_limited WHERE domain_id = ${d.id} FOR UPDATE`, 2, () => [
    n.a.inbound.recordLimited(d, 'monthly', 60_000, 3_700_000),
    n.b.inbound.recordLimited(d, 'monthly', 60_000, 3_700_001),
  ]);
  t.same(later.sort(), [false, true], 'an hour later, again one');
  t.equal(await limitedEvents(), 2);
});

t.test('postgres: the same complaint applied by two nodes at once is recorded once', async (t) => {
  const n = await twoNodes(t);
  const who = await sender(n.a);
  const m = await send(n.a, who, { to: ['b@example.net'], now: 1000 });
  t.equal(m.result.kind, 'accepted');
  const claimed = await n.a.delivery.claim('w', 1000, 10);
  await n.a.delivery.record({
    results: claimed.map((c) => ({
      ...c,
      outcome: {
        kind: 'delivered',
        reply: { code: 250, enhanced_code: '2.0.0', message: 'ok', classification: 'delivered' },
        mx: 'mx',
        tls: false,
        tlsVerified: false,
      },
    })),
    composed: new Map(),
    postpone: [],
    policy: { retrySchedule: [60_000], maxQueueTime: 3_600_000 },
    now: 2000,
  });
  const rcpt = claimed[0]!.recipient;
  const secret = randomBytes(32);
  const complaint: Report = {
    kind: 'arf',
    originalMessageId: null,
    recipients: [],
    feedback: { feedbackType: 'abuse', userAgent: 'FBL/1.0', arrivalDate: null, recipient: null },
    originalSender: returnPath(secret, rcpt.id, 'bounces.example'),
  };
  const receive = (s: Store) =>
    s.inbound.receive({
      stores: [],
      report: complaint,
      reports: [{ mailFrom: '', rcptTo: 'fbl@example.com', route: 'feedback' }],
      raw: Buffer.from('arf'),
      secret,
      now: 3000,
    });
  // Both have stored the report and wait to look at the recipient (its row, locked first).
  await released(n, `SELECT 1 FROM recipients WHERE id = ${rcpt.id} FOR UPDATE`, 2, () => [receive(n.a), receive(n.b)]);
  const events = (
    await n.sql.query('SELECT type FROM events WHERE recipient_id = $1 ORDER BY seq', [rcpt.id])
  ).rows.map((r) => r.type as string);
  t.same(
    events,
    ['email.delivered', 'email.complained', 'recipient.suppressed'],
    'one email.complained, one suppression',
  );
  t.equal(
    Number((await n.sql.query("SELECT count(*) FROM inbound_reports WHERE kind = 'arf'")).rows[0].count),
    2,
    'both reports kept',
  );
  const counted = (
    await n.sql.query("SELECT coalesce(sum(count), 0)::int AS n FROM activity_hourly WHERE kind = 'complained'")
  ).rows[0].n;
  t.equal(counted, 1, 'counted once in the overview');
});

t.test(
  'postgres: retention runs once per schedule: of two nodes whose schedules fire together, one runs it',
  async (t) => {
    const n = await twoNodes(t);
    const fire = () => [n.a.admin.claimJob('retention', 30_000), n.b.admin.claimJob('retention', 30_000)];
    // The first run (no row yet): both insert, the second waits for the first's row.
    t.same(
      (await released(n, 'LOCK TABLE job_runs IN SHARE ROW EXCLUSIVE MODE', 2, fire)).sort(),
      [false, true],
      'one node claims the run',
    );
    t.same(await Promise.all(fire()), [false, false], 'a node whose clock fires a moment later finds it taken');
    // The next day's run: the row exists; both wait for its lock, the one after finds it moved.
    await n.sql.query("UPDATE job_runs SET last_run = now() - interval '1 day'");
    t.same(
      (await released(n, "SELECT 1 FROM job_runs WHERE name = 'retention' FOR UPDATE", 2, fire)).sort(),
      [false, true],
      'the next run, again one',
    );
    t.same(await n.a.admin.claimJob('other', 30_000), true, 'each job its own');
  },
);

t.test("postgres: the dashboard's login throttle counts every node's failures", async (t) => {
  const n = await twoNodes(t);
  const onA = new LoginThrottle(n.a.users.loginFailures);
  const onB = new LoginThrottle(n.b.users.loginFailures);
  t.ok(n.a.users.loginFailures, 'PostgreSQL shares them');
  // Five failures per account in 15 minutes, spread over two nodes behind a load balancer.
  const now = 10_000_000;
  await Promise.all([
    onA.fail('admin@example.com', '192.0.2.1', now),
    onB.fail('admin@example.com', '192.0.2.2', now),
    onA.fail('admin@example.com', '192.0.2.3', now + 1),
  ]);
  t.equal(await onB.wait('admin@example.com', '192.0.2.9', now + 2), 0, 'three: go ahead');
  await onB.fail('admin@example.com', '192.0.2.4', now + 2);
  await onA.fail('admin@example.com', '192.0.2.5', now + 3);
  t.equal(
    await onB.wait('admin@example.com', '192.0.2.9', now + 4),
    15 * 60_000 - 4,
    'five on two nodes: refused on either until the oldest leaves the window',
  );
  t.equal(await onA.wait('admin@example.com', '192.0.2.9', now + 4), 15 * 60_000 - 4);
  t.equal(await onA.wait('other@example.com', '192.0.2.9', now + 4), 0, 'another account is not');
  t.equal(await onA.wait('admin@example.com', '192.0.2.9', now + 15 * 60_000 + 1), 0, 'the window past: go ahead');
  await onA.succeed('admin@example.com');
  t.equal(
    await onB.wait('admin@example.com', '192.0.2.9', now + 5),
    0,
    'a success on one node clears the account on the other',
  );
  // Per address: twenty, whatever the accounts, whichever node.
  for (let i = 0; i < 20; i++) await (i % 2 ? onA : onB).fail(`user${i}@example.com`, '198.51.100.7', now + 10 + i);
  t.ok(
    (await onA.wait('new@example.com', '198.51.100.7', now + 40)) > 0,
    'an address over its limit on both nodes together is refused',
  );
  await onA.fail('x@example.com', '192.0.2.1', now + 15 * 60_000 + 100);
  t.equal(
    Number((await n.sql.query("SELECT count(*) FROM login_failures WHERE key = 'i:192.0.2.1'")).rows[0].count),
    1,
    'failures past the window are forgotten as new ones come',
  );
});

t.test(
  'postgres: no hot rows: a send and a receipt commit while another node holds its own open transaction with the same key, customer and domain',
  async (t) => {
    const n = await twoNodes(t, Date.now());
    // Node B's store on one connection, named: its backend's counter shard is known.
    const b = pgStore(n.url, { max: 1, applicationName: 'node-b' });
    t.teardown(() => b.admin.close());
    const now = Date.now();
    const who = await sender(b, 'example.com', now);
    const c = (await b.customers.find('default'))!;
    const added = await b.domains.add({ customerId: c.id, name: 'in.example', receiving: true, now });
    t.equal((await send(b, who, { now })).result.kind, 'accepted', "the key's last use: now");
    const pidB = (await n.sql.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'node-b'")).rows[0]
      .pid as number;
    // B's shard: the slot its connection holds (store/pg/db.ts).
    const shardB = Number(
      (
        await n.sql.query(
          "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND classid = 1885893480 AND pid = $1",
          [pidB],
        )
      ).rows[0].objid,
    );
    // Node A: a connection whose shard differs (counters are kept per connection's shard).
    let a: pg.Client | undefined;
    for (let i = 0; i < 20 && !a; i++) {
      const x = new pg.Client({ connectionString: n.url });
      await x.connect();
      if ((await x.query('SELECT posthaste_shard() AS s')).rows[0].s !== shardB) a = x;
      else await x.end();
    }
    t.ok(a, 'a connection on another shard');
    const nodeA = a!;
    t.teardown(() => nodeA.end());
    // A's transaction writes what a send and a receipt write, and stays open.
    await nodeA.query('BEGIN');
    const m = await nodeA.query(
      `INSERT INTO messages (customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, request, created_at)
     VALUES ($1, 'held@example.com', $2, 0, 'shop@example.com', 'example.com', 's', '\\x7b7d', $3) RETURNING id`,
      [c.id, who.keyId, now + 1],
    );
    await nodeA.query(
      "INSERT INTO recipients (message_id, customer_id, address, domain, field, created_at, updated_at) VALUES ($1, $2, 'x@example.net', 'example.net', 'to', $3, $3)",
      [m.rows[0].id, c.id, now + 1],
    );
    await nodeA.query(
      'INSERT INTO inbound_usage (domain_id, period, shard, count) SELECT $1, p, posthaste_shard(), 1 FROM unnest($2::text[]) AS p ON CONFLICT (domain_id, period, shard) DO UPDATE SET count = inbound_usage.count + 1',
      [added.id, [`m:${Math.floor((now + 1) / 60_000)}`, `M:${new Date(now + 1).toISOString().slice(0, 7)}`]],
    );
    const within = <T>(p: Promise<T>) =>
      Promise.race([p, new Promise<'waiting'>((r) => setTimeout(() => r('waiting'), 5000))]);
    const sent = await within(send(b, who, { now: now + 2 }));
    t.match(
      sent,
      { result: { kind: 'accepted' } },
      "B's send with the same key commits meanwhile: the key's last use is written at most once a minute, the hour's counter is B's shard",
    );
    const received = await within(
      b.inbound.receive({
        stores: [
          {
            customerId: c.id,
            domainId: added.id,
            mailFrom: 'alice@example.org',
            rcptTo: ['support@in.example'],
            remoteIp: '192.0.2.1',
            helo: 'mx.example.org',
            fromHeader: 'Alice <alice@example.org>',
            to: ['support@in.example'],
            subject: 'Help',
            messageId: 'abc@example.org',
            attachments: 0,
            auth: { spf: 'pass', dkim: 'none', dmarc: 'none' },
          },
        ],
        report: null,
        reports: [],
        raw: Buffer.from('Subject: Help\r\n\r\nhi\r\n'),
        secret: randomBytes(32),
        now: now + 2,
      }),
    );
    t.not(received, 'waiting', "B's receipt for the same domain commits meanwhile: the month's count is B's shard");
    await nodeA.query('COMMIT');
    const d = (await b.domains.receiving('in.example'))!;
    t.same(
      await b.inbound.checkLimits({ ...d, monthlyLimit: 2 }, { ratePerMinute: 0, monthlyLimit: 0 }, now + 3),
      {
        ok: false,
        limit: 'monthly',
        windowEndsAt: Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth() + 1, 1),
      },
      'the limit counts both shards',
    );
    await b.admin.purgeOld(now + 2 * 3_600_000, 30);
    t.same(
      (await n.sql.query('SELECT DISTINCT substr(period, 1, 1) AS p FROM inbound_usage')).rows.map((r) => r.p),
      ['M'],
      "retention removes the per-minute counts past the hour (only the current minute is read), and keeps the month's",
    );
  },
);
