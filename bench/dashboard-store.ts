// The stores bench/dashboard measures: a week of a sender's traffic written through the store's
// own functions (accept, outcomes, complaints, webhook attempts), kept between runs while the
// code that writes them is unchanged (a million messages take minutes to write).

import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fullGrant } from '../src/domain/key-scopes.js';
import type { Outcome } from '../src/domain/outcome.js';
import { hashPassword } from '../src/lib/password.js';
import type { Claimed, QueuedMessage, SettledAttempt } from '../src/store/model.js';
import { addCustomer, ensureDefaultCustomer } from '../src/store/sqlite/customers.js';
import { type Db, migrate, openDb } from '../src/store/sqlite/db.js';
import { addDomain, setVerified } from '../src/store/sqlite/domains.js';
import { createKey } from '../src/store/sqlite/keys.js';
import { acceptMessage } from '../src/store/sqlite/messages.js';
import { type OutcomePolicy, recordComplaint, recordOutcome } from '../src/store/sqlite/transitions.js';
import { addUser } from '../src/store/sqlite/users.js';
import { recordAttempts } from '../src/store/sqlite/webhook-attempts.js';
import { createEndpoint } from '../src/store/sqlite/webhooks.js';
import { ROOT, workDir } from './lib.js';

const HOUR = 3_600_000;
const WEEK = 7 * 24 * HOUR;
export const PASSWORD = 'bench-password-1';

/** A small deterministic generator, so both stores are drawn alike and runs compare. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

export interface Store {
  dataDir: string;
  /** Things the requests look for: an address with several messages, Message-IDs, a day. */
  recipient: string;
  messageIds: string[];
  day: { since: number; until: number };
}

const reply = (code: number, enhanced: string, message: string, classification: string) => ({
  code,
  enhanced_code: enhanced,
  message,
  classification,
});
const policy: OutcomePolicy = { retrySchedule: [60_000, 300_000, 1_800_000, 7_200_000], maxQueueTime: 5 * 24 * HOUR };

/**
 * `size` messages over the last seven days for the customer shown (nine in ten; the tenth goes to
 * another customer), one recipient each and a Cc on one in five, from a pool of a quarter as many
 * addresses (so an address has about five messages). Outcomes: delivered, with one in a hundred
 * deferred (in the last day, still queued), three in a hundred bounced, one in three hundred
 * delivered and then complained of. Every event goes to one webhook endpoint and succeeds.
 */
function fill(db: Db, size: number, now: number): Omit<Store, 'dataDir'> {
  const random = rng(size);
  ensureDefaultCustomer(db, now - WEEK - HOUR);
  const other = addCustomer(db, 'other', now - WEEK - HOUR);
  const keys = [1, other.id].map(
    (customerId) =>
      createKey(db, { grant: fullGrant(), customerId, kind: 'production', name: 'bench', now: now - WEEK - HOUR }).id,
  );
  for (const [customerId, name] of [
    [1, 'shop.example'],
    [other.id, 'other.example'],
  ] as const)
    setVerified(
      db,
      addDomain(db, { customerId, name, receiving: false, now: now - WEEK - HOUR }).id,
      now - WEEK - HOUR,
    );
  const endpoint = createEndpoint(db, {
    customerId: 1,
    url: 'https://hooks.example/posthaste',
    events: null,
    description: 'bench',
    secret: 'whsec_' + 'A'.repeat(43),
    now: now - WEEK - HOUR,
  });
  const pool = Math.max(10, Math.floor(size / 4));
  const address = (n: number) => `customer${n}@mail${n % 97}.example`;
  const messageIds: string[] = [];
  const step = WEEK / size;
  const BATCH = 5_000;
  for (let start = 0; start < size; start += BATCH) {
    db.tx(() => {
      for (let i = start; i < Math.min(size, start + BATCH); i++) {
        const at = Math.floor(now - WEEK + i * step);
        const customerId = i % 10 === 9 ? other.id : 1;
        const messageId = `${i.toString(36)}.${Math.floor(random() * 2 ** 32).toString(36)}@shop.example`;
        const to = address(Math.floor(random() * pool));
        const recipients: Array<{ address: string; domain: string; field: 'to' | 'cc' }> = [
          { address: to, domain: to.split('@')[1]!, field: 'to' },
        ];
        if (random() < 0.2) {
          const cc = address(Math.floor(random() * pool));
          if (cc !== to) recipients.push({ address: cc, domain: cc.split('@')[1]!, field: 'cc' });
        }
        const subject = `Your order #${100000 + i} has shipped`;
        const metadata = { order: String(100000 + i) };
        const body = JSON.stringify({
          from: 'Shop <orders@shop.example>',
          to: recipients.map((r) => r.address),
          subject,
          text_body: 'Your parcel is on its way. Track it in your account.',
          metadata,
        });
        // One message in twenty is of a campaign, tagged: the tag search looks for those.
        const tags = i % 20 === 0 ? ['winter-sale'] : [];
        const r = acceptMessage(db, {
          customerId,
          apiKeyId: keys[customerId === 1 ? 0 : 1]!,
          sandbox: false,
          messageId,
          fromHeader: 'Shop <orders@shop.example>',
          senderDomain: 'shop.example',
          subject,
          metadata,
          request: body,
          recipients,
          tags,
          now: at,
        });
        if (r.kind !== 'accepted') continue; // a recipient suppressed by an earlier bounce or complaint
        if (customerId === 1 && i % Math.max(1, Math.floor(size / 50)) < 1) messageIds.push(messageId);
        const m: QueuedMessage = {
          id: r.emailId,
          customerId,
          messageId,
          headerMessageId: null,
          sandbox: false,
          fromHeader: 'Shop <orders@shop.example>',
          senderDomain: 'shop.example',
          subject,
          metadata,
          request: Buffer.from(body),
          requestFormat: 'json',
          raw: null,
          createdAt: at,
          tags,
          unsubscribe: false,
          pool: null,
        };
        const rows = db
          .statement('SELECT id, address, domain FROM recipients WHERE message_id = ? ORDER BY id')
          .all(r.emailId) as Array<{ id: number; address: string; domain: string }>;
        for (const row of rows) {
          const claimed: Claimed = {
            id: row.id,
            messageRowId: r.emailId,
            address: row.address,
            domain: row.domain,
            attempts: 0,
            sourceIp: null,
          };
          const roll = random();
          const outcomeAt = at + 1500;
          let outcome: Outcome;
          if (roll < 0.03)
            outcome = {
              kind: 'bounced',
              bounceType: 'hard',
              reply: reply(550, '5.1.1', 'The email account that you tried to reach does not exist.', 'unknown_user'),
              suppress: true,
            };
          else if (roll < 0.04 && at > now - 24 * HOUR)
            outcome = {
              kind: 'deferred',
              reply: reply(421, '4.7.0', 'Try again later, closing connection.', 'rate_limited'),
            };
          else
            outcome = {
              kind: 'delivered',
              reply: reply(250, '2.0.0', `OK ${at} q${i}si - gsmtp`, 'delivered'),
              mx: `mx.${row.domain}`,
              tls: true,
              tlsVerified: false,
            };
          recordOutcome(db, m, claimed, outcome, policy, outcomeAt);
          if (outcome.kind === 'delivered' && roll > 1 - 1 / 300)
            recordComplaint(db, m, claimed, { feedback_type: 'abuse', user_agent: 'bench/1.0' }, outcomeAt + HOUR);
        }
        if (customerId !== 1) continue;
        const events = db
          .statement('SELECT seq, id, type, created_at FROM events WHERE message_id = ? ORDER BY seq')
          .all(r.emailId) as Array<{
          seq: number;
          id: string;
          type: string;
          created_at: number;
        }>;
        const batch: SettledAttempt[] = events.map((e) => ({
          attempt: {
            endpointId: endpoint.id,
            deliveryId: null,
            eventId: e.id,
            eventType: e.type,
            attempt: 1,
            at: e.created_at + 40,
            status: 200,
            error: null,
            durationMs: 38,
            response: '{"ok":true}',
          },
          deliveryId: null,
          eventSeq: e.seq,
          state: 'succeeded',
          nextAt: null,
          disableEndpoint: false,
        }));
        recordAttempts(db, {
          batch,
          pending: [],
          cursor: events.length ? { x: 0, seq: events.at(-1)!.seq } : null,
          now: at + 1600,
        });
      }
    });
  }
  // The address searched for: the first message's, which has a few others in the pool.
  const recipient = db
    .statement('SELECT address FROM recipients WHERE customer_id = 1 ORDER BY id LIMIT 1')
    .pluck()
    .get() as string;
  const mid = now - 3.5 * 24 * HOUR;
  return { recipient, messageIds, day: { since: mid, until: mid + 24 * HOUR } };
}

/** The store modules the fill writes through (with db.ts, which migrates): their code decides a store's contents. */
const WRITERS = [
  'db',
  'customers',
  'keys',
  'domains',
  'messages',
  'queue',
  'recipients',
  'events',
  'suppressions',
  'webhooks',
  'users',
];

/**
 * The code a store's contents depend on: the SQLite engine's migrations, the store modules the
 * fill writes through, the rules of domain/ they write by, and this file. A store built by the
 * same code is used again; any change to that code builds it afresh. (A reader such as
 * overview.ts does not count: it changes no row.)
 */
function fingerprint(size: number): string {
  const hash = createHash('sha256').update(String(size));
  const store = join(ROOT, 'dist', 'src', 'store', 'sqlite');
  const migrations = readdirSync(join(store, 'migrations'))
    .filter((f) => f.endsWith('.js'))
    .map((f) => join(store, 'migrations', f));
  // The rules the engine writes by (an outcome's transition and events, the VERP token…) are domain/'s.
  const domain = join(ROOT, 'dist', 'src', 'domain');
  const rules = readdirSync(domain)
    .filter((f) => f.endsWith('.js'))
    .map((f) => join(domain, f));
  const files = [
    ...migrations,
    ...rules,
    ...WRITERS.map((w) => join(store, `${w}.js`)),
    fileURLToPath(import.meta.url),
  ];
  for (const f of files.sort()) hash.update(f).update(readFileSync(f));
  return hash.digest('hex');
}

export async function build(size: number, now: number): Promise<Store & { reused: boolean }> {
  const print = fingerprint(size);
  const kept = join(ROOT, 'bench', '.work', `dashboard-${size}`);
  const manifest = join(kept, 'store.json');
  if (existsSync(manifest)) {
    const m = JSON.parse(readFileSync(manifest, 'utf8')) as Store & { fingerprint: string; builtAt: number };
    // Kept for six hours at most: the overview's last 24 hours and 7 days are read against the clock.
    if (m.fingerprint === print && now - m.builtAt < 6 * HOUR) return { ...m, reused: true };
  }
  const dir = workDir(`dashboard-${size}`);
  const dataDir = join(dir, 'data');
  const db = openDb(dataDir);
  migrate(db, now - WEEK - 2 * HOUR);
  // Filling a fixture, not serving: no fsync per batch and a large page cache (a million
  // messages took 19 minutes with the daemon's durable settings, most of it in the kernel).
  db.sqlite.pragma('synchronous = OFF');
  db.sqlite.pragma('cache_size = -1048576');
  const found = fill(db, size, now);
  addUser(db, {
    email: 'admin@bench.example',
    passwordHash: await hashPassword(PASSWORD),
    role: 'admin',
    customerId: null,
    now,
  });
  db.sqlite.pragma('wal_checkpoint(TRUNCATE)');
  db.sqlite.exec('ANALYZE');
  db.close();
  const store = { dataDir, ...found };
  writeFileSync(manifest, JSON.stringify({ ...store, fingerprint: print, builtAt: now }));
  return { ...store, reused: false };
}
