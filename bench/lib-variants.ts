// The variants the accept and submission benchmarks measure beside their plain daemon
// (docs/testing.md, "What each benchmark measures"): a data directory with the sender's keys
// and domain, a scoped key beside the full one, and a "guarded" daemon's send quotas and
// `[reputation]` section. Which variants run: BENCH_VARIANTS (a comma list; all when unset).

import { fullGrant, type KeyGrant } from '../src/domain/key-scopes.js';
import { ensureDefaultCustomer } from '../src/store/sqlite/customers.js';
import { type Db, migrate, openDb } from '../src/store/sqlite/db.js';
import { addDomain, setVerified } from '../src/store/sqlite/domains.js';
import { createKey } from '../src/store/sqlite/keys.js';
import { setCustomerQuotas } from '../src/store/sqlite/quotas.js';
import { processCpu } from './lib.js';

/** The variants a benchmark runs: those named in BENCH_VARIANTS (comma-separated), every one when it is unset. */
export function variantsOn<V extends string>(all: readonly V[]): Set<V> {
  const asked = process.env.BENCH_VARIANTS?.split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  if (!asked?.length) return new Set(all);
  return new Set(all.filter((v) => asked.includes(v)));
}

/** The sending domain the benchmarks' messages are from. */
export const SENDING_DOMAIN = 'example.com';

/** Send only, and only as the sending domain: a key scoped as docs/api.md "Keys and scopes" advises for an application. */
export const scopedGrant = (): KeyGrant => ({ scopes: ['send'], from_domains: [SENDING_DOMAIN], allowed_cidrs: null });

/**
 * The guarded daemon's quotas, the customer's own (`customers set`): in effect, so every send is
 * judged and counted, and far above what a run accepts (a 2-core machine accepts under 20,000 a
 * second), so none is refused.
 */
export const GUARD_QUOTAS = { perMinute: 100_000_000, perDay: 1_000_000_000, perMonth: 1_000_000_000 };

/**
 * The guarded daemon's `[reputation]` section: the guard's defaults written out (it is on unless
 * check_interval is 0), so the benchmark says what it ran with.
 */
export const GUARD_TOML =
  '[reputation]\nwindow = "7d"\nmin_recipients = 200\nwarning_bounce_rate = "4%"\nwarning_complaint_rate = "0.08%"\n' +
  'pause_bounce_rate = "8%"\npause_complaint_rate = "0.3%"\ncheck_interval = "2s"\n';

/** What the guarded variant is, in a benchmark's line. */
export const GUARD_WORDS = `quotas ${GUARD_QUOTAS.perMinute.toLocaleString('en-US')}/min, ${GUARD_QUOTAS.perDay.toLocaleString('en-US')}/day and /month (the customer's own), [reputation] check every 2 s`;

/**
 * A migrated SQLite data directory with the default customer, its verified sending domain, a
 * production key with every scope and one scoped (scopedGrant); with `quotas`, the customer's own
 * send quotas (GUARD_QUOTAS). The store is left open for the caller to count what was stored.
 */
export function senderDataDir(
  dataDir: string,
  opts: { quotas?: boolean } = {},
): { db: Db; full: string; scoped: string } {
  const db = openDb(dataDir);
  const now = Date.now();
  migrate(db, now);
  ensureDefaultCustomer(db, now);
  const key = (grant: KeyGrant, name: string) =>
    createKey(db, { grant, customerId: 1, kind: 'production', name, now }).key;
  const full = key(fullGrant(), 'bench');
  const scoped = key(scopedGrant(), 'bench-scoped');
  setVerified(db, addDomain(db, { customerId: 1, name: SENDING_DOMAIN, receiving: false, now }).id, now);
  if (opts.quotas && !setCustomerQuotas(db, 1, GUARD_QUOTAS)) throw new Error('no default customer for the quotas');
  return { db, full, scoped };
}

/** Rows in the messages table. */
export const storedMessages = (db: Db): number =>
  db.sqlite.prepare('SELECT COUNT(*) FROM messages').pluck().get() as number;

/**
 * `rounds` rounds measuring every side once, in order in even rounds and in reverse in odd ones,
 * so a drift in the machine's speed falls on every side alike (lib.ts alternate, for more than
 * two). The results by side, in rounds' order.
 */
export async function rotate<T>(rounds: number, sides: ReadonlyArray<() => Promise<T>>): Promise<T[][]> {
  const out = sides.map(() => [] as T[]);
  for (let round = 0; round < rounds; round++) {
    const order = sides.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order) out[i]!.push(await sides[i]!());
  }
  return out;
}

/**
 * `fn`'s result with the CPU seconds process `pid` used while it ran (user and system, every
 * thread; /proc, in hundredths): what a side's requests cost its server during its own rounds,
 * a steadier figure than a rate while others share the machine.
 */
export async function withCpu<T extends object>(pid: number, fn: () => Promise<T>): Promise<T & { cpuS: number }> {
  const before = processCpu(pid);
  const result = await fn();
  return { ...result, cpuS: processCpu(pid) - before };
}

/** Milliseconds of CPU per request over rounds (with withCpu's cpuS), `count` requests in each. */
export const cpuPer = <R extends { cpuS: number }>(rounds: R[], count: (r: R) => number): number =>
  (rounds.reduce((a, r) => a + r.cpuS, 0) * 1000) / rounds.reduce((a, r) => a + count(r), 0);
