// bench/path: delivery where a connection waits on round trips, not on the CPU, as to an MX across
// the Internet. The receiver is Debian's Postfix smtpd (it offers PIPELINING and CHUNKING, fsyncs
// each message before its 250, then discards it) behind a proxy that holds every byte ONE_WAY_MS
// in each direction. posthaste drains N queued messages through it with CONNECTIONS connections,
// then N more with outbound.chunking = false (DATA, as before BDAT); beside it, in the same run,
// Postfix's own client relays N over the same path with the same number of connections.

import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { daemonArgs, fixedPort, fmt, memoryLine, memoryOf, spawnReady, stop, waitUntil } from './lib.js';
import { discardingMx, heldRelay, smtpSource } from './postfix.js';
import { queueMessages, rateLine, sinkRig } from './sink-rig.js';

const N = Number(process.env.BENCH_PATH_N ?? 2_000);
/** BENCH_PATH_MS=0 leaves only the proxy's own turn of the event loop: what the two ends' CPU and the receiver's queue allow. */
const ONE_WAY_MS = Number(process.env.BENCH_PATH_MS ?? 10);
const CONNECTIONS = 5;
const MX_PORT = fixedPort(24028);
const PATH_PORT = fixedPort(24029);
const POSTFIX_PORT = fixedPort(24592);

/** Commands that went through the path to the server: how each message was sent, and RSETs (each one more round trip). */
interface Seen {
  bdat: number;
  data: number;
  rset: number;
}

const COMMANDS: Array<[keyof Seen, RegExp]> = [
  ['bdat', /\nBDAT \d+ LAST\r\n/g],
  ['data', /\nDATA\r\n/g],
  ['rset', /\nRSET\r\n/g],
];

function since(now: Seen, before: Seen): Seen {
  return { bdat: now.bdat - before.bdat, data: now.data - before.data, rset: now.rset - before.rset };
}

/**
 * A TCP proxy to `to` that holds each chunk `ms` before passing it on, in order, both ways: a path
 * whose round trip is 2 × `ms`. Counts the BDAT and DATA commands going to the server.
 */
function delayedPath(port: number, to: number, ms: number): Promise<{ seen: Seen; close(): void }> {
  const seen: Seen = { bdat: 0, data: 0, rset: 0 };
  // Half-open both ways, and an end passed on after the same delay as the bytes before it: a server
  // that answers and closes at once (221 after a pipelined QUIT) has its answer delivered first.
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const upstream = net.connect({ port: to, host: '127.0.0.1', allowHalfOpen: true });
    for (const [from, other] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.setNoDelay(true);
      from.on('error', () => undefined);
      from.on('end', () => setTimeout(() => other.end(), ms));
      from.on('close', () => setTimeout(() => other.destroy(), ms + 1));
    }
    // Commands are counted at line starts (the benchmarks' messages carry no line that looks like
    // one), across chunk boundaries: a match is counted in the chunk where it ends.
    let tail = '\n';
    client.on('data', (chunk: Buffer) => {
      const text = tail + chunk.toString('latin1');
      for (const [name, re] of COMMANDS)
        for (const m of text.matchAll(re)) if (m.index + m[0].length > tail.length) seen[name]++;
      tail = text.slice(-32);
      setTimeout(() => upstream.write(chunk), ms);
    });
    upstream.on('data', (chunk: Buffer) => setTimeout(() => client.write(chunk), ms));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({ seen, close: () => server.close() }));
  });
}

export async function benchPath(): Promise<{ lines: string[] }> {
  const { dir, db, key, config, close } = await sinkRig('path', PATH_PORT, {
    receiver: false,
    outbound: [`concurrency_per_domain = ${CONNECTIONS}`],
  });
  const mx = discardingMx(join(dir, 'mx'), MX_PORT).start();
  const path = await delayedPath(PATH_PORT, MX_PORT, ONE_WAY_MS);
  try {
    // posthaste as configured, then with outbound.chunking = false (DATA after the pipelined
    // envelope), each draining a batch of N.
    const left = db.sqlite.prepare("SELECT COUNT(*) FROM recipients WHERE state IN ('queued', 'deferred')").pluck();
    const delivered = db.sqlite.prepare("SELECT COUNT(*) FROM recipients WHERE state = 'delivered'").pluck();
    const noChunking = join(dir, 'no-chunking.toml');
    writeFileSync(noChunking, readFileSync(config, 'utf8').replace('[outbound]\n', '[outbound]\nchunking = false\n'));
    const drain = async (configFile: string, batch: number) => {
      queueMessages(db, key.id, N, batch * N);
      const before = { ...path.seen };
      const t0 = performance.now();
      const daemon = await spawnReady(process.execPath, daemonArgs(configFile, join(dir, 'prof')), /API on/);
      await waitUntil(() => (left.get() as number) === 0, 600_000);
      const seconds = (performance.now() - t0) / 1000;
      const memory = memoryOf(daemon.child.pid!);
      await stop(daemon.child);
      if (delivered.get() !== (batch + 1) * N)
        throw new Error(`posthaste delivered ${delivered.get()} of ${(batch + 1) * N}`);
      return { seconds, memory, seen: since(path.seen, before) };
    };
    const ph = await drain(config, 0);
    if (process.env.BENCH_PROF) return { lines: [`profile written to ${join(dir, 'prof')}`] };
    const phData = await drain(noChunking, 1);
    const size = db.sqlite.prepare('SELECT AVG(size) FROM messages').pluck().get() as number;

    // Postfix: the same N through smtp-source into a held queue, released, timed until empty; its
    // client starts at the same number of connections instead of working up to it.
    const relay = heldRelay(join(dir, 'postfix'), POSTFIX_PORT, PATH_PORT, [
      `smtp_destination_concurrency_limit = ${CONNECTIONS}`,
      `smtp_initial_destination_concurrency = ${CONNECTIONS}`,
    ]).start();
    try {
      await sleep(500);
      smtpSource(POSTFIX_PORT, N, 20, 2048);
      await waitUntil(() => relay.queued() >= N, 120_000);
      const before = { ...path.seen };
      const t1 = performance.now();
      relay.release();
      await waitUntil(() => relay.queued() === 0, 600_000);
      const pf = { seconds: (performance.now() - t1) / 1000, seen: since(path.seen, before) };
      const every = (seconds: number) => `${fmt((CONNECTIONS * seconds * 1000) / N, 1)} ms`;
      const said = (s: Seen) => `${fmt(s.bdat)} BDAT, ${fmt(s.data)} DATA, ${fmt(s.rset)} RSET`;
      return {
        lines: [
          `path: ${fmt(N)} queued messages (~${Math.round(size)} bytes composed) to Postfix's smtpd (PIPELINING and CHUNKING offered) over a path of ${2 * ONE_WAY_MS} ms round trip, ${CONNECTIONS} connections on each side`,
          rateLine(N, { label: 'posthaste (BDAT; DKIM rsa-sha256, start included)  ', seconds: ph.seconds }),
          rateLine(N, { label: 'posthaste, outbound.chunking = false (DATA)        ', seconds: phData.seconds }),
          rateLine(N, { label: 'Postfix 3 relay (no DKIM)                          ', seconds: pf.seconds }),
          `  ratio posthaste / Postfix  ${fmt(pf.seconds / ph.seconds, 2)}  (none set); with DATA ${fmt(pf.seconds / phData.seconds, 2)}`,
          `  a message every ${every(ph.seconds)} a connection (posthaste), ${every(phData.seconds)} (with DATA), ${every(pf.seconds)} (Postfix)`,
          `  commands through the path: posthaste ${said(ph.seen)}; with DATA ${said(phData.seen)}; Postfix ${said(pf.seen)}`,
          memoryLine(Math.max(ph.memory.peak, phData.memory.peak)),
        ],
      };
    } finally {
      relay.stop();
    }
  } finally {
    path.close();
    mx.stop();
    await close();
  }
}
