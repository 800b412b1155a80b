// bench/dashboard: how long the dashboard takes to answer the message search, a message's page and
// the overview, with 1,000 and with 1,000,000 messages in the store. The store is filled through
// the store's own functions (accept, outcomes, complaints, webhook attempts), over the last seven
// days, as a week of a real sender's traffic would leave it; the daemon then serves it and each
// page is requested over loopback by a logged-in user. The 1,000-message store is the anchor: a
// page may cost at most 1.5 times as much at a million (no count or scan of a whole table).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { TestDnsServer } from '../support/dns-server.js';
import { build, PASSWORD, type Store } from './dashboard-store.js';
import { daemonArgs, fmt, idleMemory, median, memoryLine, memoryOf, spawnReady, stop } from './lib.js';

/** Requests per page and store, after WARMUP of each (statement preparation and the JIT). */
const REQUESTS = Number(process.env.BENCH_DASHBOARD_REQUESTS ?? 200);
const WARMUP = 20;

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))]!;

/** A daemon serving a store, and a logged-in GET against it that returns its time in ms. */
async function serve(
  store: Store,
  dns: TestDnsServer,
): Promise<{ get: (path: string) => Promise<number>; stop: () => Promise<void>; idle: number; peak: () => number }> {
  const dir = join(store.dataDir, '..');
  const config = join(dir, 'posthaste.toml');
  // The queue is held and the webhook endpoint's events are all delivered: nothing but the
  // dashboard works while it is measured.
  writeFileSync(
    config,
    `[server]\nhostname = "bench.local"\ndata_dir = "${store.dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = "127.0.0.1:0"\n[outbound]\nhold = true\n[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`,
  );
  const ph = await spawnReady(process.execPath, daemonArgs(config), /dashboard on (http:\/\/127\.0\.0\.1:\d+)/);
  const base = ph.match[1]!;
  try {
    const login = await request(`${base}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
      body: new URLSearchParams({ email: 'admin@bench.example', password: PASSWORD }).toString(),
    });
    await login.body.dump();
    const cookie = String(login.headers['set-cookie'] ?? '').split(';')[0]!;
    if (login.statusCode !== 303 || !cookie) throw new Error(`login answered ${login.statusCode}`);
    const get = async (path: string): Promise<number> => {
      const t0 = performance.now();
      const res = await request(base + path, { headers: { cookie } });
      const text = await res.body.text();
      const ms = performance.now() - t0;
      if (res.statusCode !== 200) throw new Error(`GET ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
      return ms;
    };
    return {
      get,
      stop: () => stop(ph.child),
      idle: await idleMemory(ph.child.pid!),
      peak: () => memoryOf(ph.child.pid!).peak,
    };
  } catch (e) {
    await stop(ph.child);
    throw e;
  }
}

const iso = (t: number) => new Date(t).toISOString().slice(0, 16);
const pagesOf = (store: Store): Array<{ name: string; path: (i: number) => string }> => [
  { name: 'overview  /', path: () => '/' },
  { name: 'search, newest first  /messages', path: () => '/messages' },
  { name: 'search by recipient', path: () => `/messages?${new URLSearchParams({ recipient: store.recipient })}` },
  {
    name: 'search by Message-ID',
    path: (i) => `/messages?${new URLSearchParams({ message_id: store.messageIds[i % store.messageIds.length]! })}`,
  },
  { name: 'search state=bounced', path: () => '/messages?state=bounced' },
  { name: 'search by tag', path: () => '/messages?tag=winter-sale' },
  { name: 'search state=deferred', path: () => '/messages?state=deferred' },
  {
    name: 'search state=delivered, one day',
    path: () =>
      `/messages?${new URLSearchParams({ state: 'delivered', since: iso(store.day.since), until: iso(store.day.until) })}`,
  },
  {
    name: "a message's page",
    path: (i) => `/messages/${encodeURIComponent(store.messageIds[i % store.messageIds.length]!)}`,
  },
];

/**
 * Both stores served at once, each page requested REQUESTS times from each, alternating request
 * by request (after WARMUP of each), so a change in the machine's speed falls on both alike.
 */
async function measure(
  small: Store,
  large: Store,
): Promise<{ rows: Array<{ name: string; small: number[]; large: number[] }>; memory: string[] }> {
  const dns = await new TestDnsServer().start();
  const servers = [await serve(small, dns), await serve(large, dns)] as const;
  try {
    const smallPages = pagesOf(small);
    const largePages = pagesOf(large);
    const out: Array<{ name: string; small: number[]; large: number[] }> = [];
    for (const [p, sp] of smallPages.entries()) {
      const lp = largePages[p]!;
      for (let i = 0; i < WARMUP; i++) {
        await servers[0].get(sp.path(i));
        await servers[1].get(lp.path(i));
      }
      const row = { name: sp.name, small: [] as number[], large: [] as number[] };
      for (let i = 0; i < REQUESTS; i++) {
        const k = i * 7 + 3;
        if (i % 2 === 0) {
          row.small.push(await servers[0].get(sp.path(k)));
          row.large.push(await servers[1].get(lp.path(k)));
        } else {
          row.large.push(await servers[1].get(lp.path(k)));
          row.small.push(await servers[0].get(sp.path(k)));
        }
      }
      out.push(row);
    }
    return { rows: out, memory: servers.map((s) => memoryLine(s.peak(), s.idle)) };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await dns.stop();
  }
}

export async function benchDashboard(): Promise<{ lines: string[] }> {
  const now = Date.now();
  const large = Number(process.env.BENCH_DASHBOARD_LARGE ?? 1_000_000);
  const t0 = performance.now();
  const smallStore = await build(1000, now);
  const largeStore = await build(large, now);
  const built = largeStore.reused
    ? 'the large one kept from a run within 6 h by the same store code'
    : `built in ${fmt((performance.now() - t0) / 1000)} s`;
  const { rows, memory } = await measure(smallStore, largeStore);
  const lines = [
    `dashboard: time to answer a logged-in GET over loopback (server time plus one keep-alive round trip), median and p95 of ${REQUESTS} per page and store, both daemons up, requests alternating, after ${WARMUP} warm-up; stores of 1,000 and ${fmt(large)} messages over 7 days (${built})`,
    `  ${'page'.padEnd(34)} ${'1,000 (anchor)'.padStart(16)} ${fmt(large).padStart(18)}   ratio`,
  ];
  let worstRatio = 0;
  let worstLarge = 0;
  for (const r of rows) {
    const ratio = median(r.large) / median(r.small);
    worstRatio = Math.max(worstRatio, ratio);
    worstLarge = Math.max(worstLarge, median(r.large));
    lines.push(
      `  ${r.name.padEnd(34)} ${`${fmt(median(r.small), 2)} / ${fmt(p95(r.small), 2)} ms`.padStart(16)} ${`${fmt(median(r.large), 2)} / ${fmt(p95(r.large), 2)} ms`.padStart(18)}   ${fmt(ratio, 2)}`,
    );
  }
  lines.push(
    `  slowest median at ${fmt(large)}: ${fmt(worstLarge, 2)} ms (goal < 50); largest ratio large / small: ${fmt(worstRatio, 2)} (goal <= 1.5)`,
  );
  lines.push(`${memory[0]} (1,000)`, `${memory[1]} (${fmt(large)})`);
  return { lines };
}
