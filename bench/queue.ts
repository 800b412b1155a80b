// bench/queue: the cost of one claim (reading 1,000 due recipients through the due index and
// recording their claims, then releasing them) with 1,000 and with 1,000,000 recipients queued.
// The per-claim time must stay flat.
import { join } from 'node:path';
import { ensureDefaultCustomer } from '../src/store/sqlite/customers.js';
import { migrate, openDb } from '../src/store/sqlite/db.js';
import { claimDue, releaseClaimsOf } from '../src/store/sqlite/queue.js';
import { fmt, workDir } from './lib.js';

function measure(size: number, scattered: boolean): number {
  const dir = workDir(`queue-${size}${scattered ? '-scattered' : ''}`);
  const db = openDb(join(dir, 'data'));
  const now = Date.now();
  migrate(db, now);
  ensureDefaultCustomer(db, now);
  db.sqlite
    .prepare(
      "INSERT INTO api_keys (id, customer_id, kind, hash, created_at) VALUES ('key_b', 1, 'production', x'00', 0)",
    )
    .run();
  const msg = db.sqlite.prepare(
    "INSERT INTO messages (customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, metadata, request, created_at) VALUES (1, ?, 'key_b', 0, 'a', 'example.com', 's', '{}', '{}', ?)",
  );
  const rcpt = db.sqlite.prepare(
    "INSERT INTO recipients (message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?, 1, ?, 'example.org', 'to', 'queued', 0, ?, ?, ?)",
  );
  for (let start = 0; start < size; start += 100_000)
    db.tx(() => {
      for (let i = start; i < Math.min(size, start + 100_000); i++) {
        const id = Number(msg.run(`m${i}@example.com`, now).lastInsertRowid);
        // Usual: due in the order accepted. Scattered (worst case): due times at random, so each
        // claim touches rows all over the table.
        const due = scattered ? now - Math.floor(Math.random() * 3_600_000) : now - size + i;
        rcpt.run(id, `r${i}@example.org`, due, now, now);
      }
    });
  db.sqlite.pragma('wal_checkpoint(TRUNCATE)');
  const rounds = 100;
  const warmup = 3; // statement preparation and the JIT, alike for every size
  let total = 0;
  for (let r = 0; r < warmup + rounds; r++) {
    const t0 = performance.now();
    const claimed = claimDue(db, 'bench', now, 1000);
    if (r >= warmup) total += performance.now() - t0;
    if (claimed.length !== Math.min(1000, size)) throw new Error(`claimed ${claimed.length}`);
    releaseClaimsOf(
      db,
      claimed.map((c) => c.id),
    );
  }
  db.close();
  return total / rounds;
}

export async function benchQueue(): Promise<{ lines: string[] }> {
  const small = measure(1000, false);
  const large = measure(1_000_000, false);
  const worst = measure(1_000_000, true);
  return {
    lines: [
      'queue: one claim of 1,000 due recipients (read through the due index, claims recorded, then released), mean of 100 after 3 warm-up claims',
      `  1,000 queued                          ${fmt(small, 2)} ms per claim`,
      `  1,000,000 queued, due in accept order  ${fmt(large, 2)} ms per claim`,
      `  1,000,000 queued, due times scattered  ${fmt(worst, 2)} ms per claim (worst case)`,
      `  ratio large / small  ${fmt(large / small, 2)}  (goal: flat, about 1); worst / small ${fmt(worst / small, 2)}`,
    ],
  };
}
