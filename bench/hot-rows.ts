// bench/hot-rows: what the rows every send would update cost when several nodes share one
// PostgreSQL. Two pools (two nodes) send with one API key on a private durable cluster, with the
// triggers as shipped (a key's last use written at most once a minute, the hourly counters in 16
// shards: store/pg/schema.ts) and with the hot variant put in their place for the run (last use
// written by every send, one counter row per customer, hour and kind). Sends with an
// Idempotency-Key, each its own transaction, show it plainly; sends without share grouped commits.
import pg from 'pg';
import { fullGrant } from '../src/domain/key-scopes.js';
import { pgStore } from '../src/store/pg/index.js';
import type { Store } from '../src/store/store.js';
import { type PgCluster, startPgCluster } from '../support/postgres.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** Sends in flight per node. */
const LOOPS = 16;

const HOT = `
CREATE OR REPLACE FUNCTION posthaste_key_last_used() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE api_keys k SET last_used_at = n.at
    FROM (SELECT api_key_id, max(created_at) AS at FROM new_rows WHERE api_key_id IS NOT NULL GROUP BY 1) n
   WHERE k.id = n.api_key_id;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION posthaste_activity_accepted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_hourly (customer_id, hour, kind, shard, count)
  SELECT customer_id, created_at / 3600000, 'accepted', 0, count(*) FROM new_rows GROUP BY 1, 2
  ON CONFLICT (customer_id, hour, kind, shard) DO UPDATE SET count = activity_hourly.count + excluded.count;
  RETURN NULL;
END $$;`;

async function sendsPerSecond(cluster: PgCluster, name: string, hot: boolean, idempotent: boolean): Promise<number> {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = cluster.url.replace(/\/postgres$/, `/${name}`);
  const nodes = [pgStore(url, { max: 8 }), pgStore(url, { max: 8 })] as const;
  const [a] = nodes;
  const now = Date.now();
  await a.admin.migrate(now);
  await a.customers.ensureDefault(now);
  const key = await a.keys.create({ grant: fullGrant(), customerId: 1, kind: 'production', name: 'bench', now });
  await a.domains.setVerified(
    (await a.domains.add({ customerId: 1, name: 'example.com', receiving: false, now })).id,
    now,
  );
  if (hot) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(HOT);
    await c.end();
  }
  const authEpoch = await a.keys.authEpoch();
  const request = JSON.stringify({
    from: 'shop@example.com',
    to: ['bob@example.net'],
    subject: 'Your order',
    text_body: 'x'.repeat(1500),
  });
  let accepted = 0;
  let i = 0;
  const end = Date.now() + SECONDS * 1000;
  const loop = async (s: Store) => {
    while (Date.now() < end) {
      const n = i++;
      const r = await s.messages.accept({
        customerId: 1,
        apiKeyId: key.id,
        sandbox: false,
        messageId: `m${n}@example.com`,
        fromHeader: 'shop@example.com',
        senderDomain: 'example.com',
        subject: 'Your order',
        metadata: {},
        request,
        recipients: [{ address: 'bob@example.net', domain: 'example.net', field: 'to' }],
        now: Date.now(),
        authEpoch,
        ...(idempotent ? { idempotency: { key: `k${n}`, hash: Buffer.alloc(32), ttlMs: 86_400_000 } } : {}),
      });
      if (r.kind === 'accepted') accepted++;
    }
  };
  await Promise.all(nodes.flatMap((s) => Array.from({ length: LOOPS }, () => loop(s))));
  await Promise.all(nodes.map((s) => s.admin.close()));
  return accepted / SECONDS;
}

export async function benchHotRows(): Promise<{ lines: string[] }> {
  const cluster = await startPgCluster({ durable: true });
  try {
    const lines = [
      `hot rows: two nodes (pools) on one PostgreSQL (fsync on), ${LOOPS} sends in flight each, one API key; ${ROUNDS} rounds of ${SECONDS} s, alternating`,
    ];
    for (const idempotent of [true, false]) {
      const got = { shipped: [] as number[], hot: [] as number[] };
      for (let round = 0; round < ROUNDS; round++)
        for (const hot of [false, true])
          got[hot ? 'hot' : 'shipped'].push(
            await sendsPerSecond(cluster, `hot_${idempotent ? 'i' : 'g'}${round}${hot ? 'h' : 's'}`, hot, idempotent),
          );
      const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
      lines.push(
        `  ${idempotent ? 'with Idempotency-Key (a transaction each)' : 'without (grouped commits)'}: as shipped ${Math.round(mean(got.shipped))} sends/s, hot rows ${Math.round(mean(got.hot))} sends/s, ratio ${(mean(got.shipped) / mean(got.hot)).toFixed(2)}`,
      );
    }
    return { lines };
  } finally {
    cluster.remove();
  }
}
