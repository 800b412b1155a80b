// What the deliver and e2e benchmarks share: a loopback smtp-sink that sink.test's MX points at
// (through a loopback DNS server), a store with a production key and the verified sender domain
// example.com, and the daemon's configuration delivering to the sink.

import type { ChildProcess } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Problems } from '../src/domain/errors.js';
import { fullGrant } from '../src/domain/key-scopes.js';
import { validateSendRequest } from '../src/domain/send-request.js';
import { ensureDefaultCustomer } from '../src/store/sqlite/customers.js';
import { type Db, migrate, openDb } from '../src/store/sqlite/db.js';
import { addDomain, setVerified } from '../src/store/sqlite/domains.js';
import { createKey } from '../src/store/sqlite/keys.js';
import { acceptMessage } from '../src/store/sqlite/messages.js';
import { TestDnsServer } from '../support/dns-server.js';
import { fmt, workDir } from './lib.js';
import { ensurePostfix, startSink } from './postfix.js';

/** The benchmarks' message: about 2 KB composed, one long line (quoted-printable). */
export function benchMessage(to: string): { from: string; to: string; subject: string; text_body: string } {
  return {
    from: 'bench@example.com',
    to,
    subject: 'bench',
    text_body: `${'x'.repeat(76)}\n${'Lorem ipsum dolor sit amet. '.repeat(68)}`,
  };
}

/**
 * Queues `n` of the benchmarks' messages, one recipient each at sink.test, as the API stores them
 * (the request body as received); `first` numbers them on from an earlier batch.
 */
export function queueMessages(db: Db, apiKeyId: string, n: number, first = 0): void {
  const now = Date.now();
  const body = benchMessage('rcpt@sink.test');
  if (validateSendRequest(body, { maxRecipients: 50 }) instanceof Problems) throw new Error('bad bench request');
  const request = Buffer.from(JSON.stringify(body));
  db.tx(() => {
    for (let i = first; i < first + n; i++)
      acceptMessage(db, {
        customerId: 1,
        apiKeyId,
        sandbox: false,
        messageId: `bench${i}@example.com`,
        fromHeader: 'bench@example.com',
        senderDomain: 'example.com',
        subject: 'bench',
        metadata: {},
        request,
        recipients: [{ address: `rcpt${i}@sink.test`, domain: 'sink.test', field: 'to' }],
        now,
      });
  });
}

/** One side's rate for `n` messages, after its label (padded by the caller to line up). */
export function rateLine(n: number, side: { label: string; seconds: number }): string {
  return `  ${side.label}${fmt(n / side.seconds)} msg/s  (${fmt(side.seconds, 2)} s)`;
}

/**
 * The lines both benchmarks report their timing in: each side's rate for `n` messages, and
 * posthaste's rate against Postfix's with the goal of 2.
 */
export function againstPostfix(
  n: number,
  posthaste: { label: string; seconds: number },
  postfix: { label: string; seconds: number },
): string[] {
  return [
    rateLine(n, posthaste),
    rateLine(n, postfix),
    `  ratio posthaste / Postfix  ${fmt(postfix.seconds / posthaste.seconds, 2)}  (goal >= 2.0)`,
  ];
}

/**
 * CPU milliseconds of one RSA-2048 signature (rsa-sha256, node:crypto, the call the signing
 * threads make) on this machine now: the part of every delivered message's cost that no code of
 * ours can shorten, measured in the same run as the ratios it bounds.
 */
export function signatureMs(): number {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.alloc(700, 'a'); // about what a signature covers: the signed header fields
  for (let i = 0; i < 100; i++) sign('sha256', data, privateKey);
  const n = 400;
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) sign('sha256', data, privateKey);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / n;
}

export interface SinkRig {
  dir: string;
  db: Db;
  /** The API key's id and its secret. */
  key: { id: string; key: string };
  /** The daemon's configuration file. */
  config: string;
  close(): Promise<void>;
}

/**
 * BENCH_POOLS=1: two pools of source addresses (docs/delivery.md, "Sending identities"), the
 * default one with a single address, so each connection binds an address and says its EHLO name
 * while the connections per destination stay the same as without pools: what pools cost.
 */
const POOLS = process.env.BENCH_POOLS
  ? [
      '[[outbound.pools]]',
      'name = "transactional"',
      'addresses = [ { ip = "127.0.0.2", ehlo = "mta2.bench.local" } ]',
      '[[outbound.pools]]',
      'name = "bulk"',
      'addresses = [ { ip = "127.0.0.3", ehlo = "mta3.bench.local" } ]',
    ]
  : [];

/**
 * The rig for a benchmark called `name`, delivering to `sinkPort`: an smtp-sink there unless
 * `receiver` is false (the benchmark puts its own receiver there); `outbound`: more lines for the
 * daemon's [outbound] section (then the pools of BENCH_POOLS).
 */
export async function sinkRig(
  name: string,
  sinkPort: number,
  opts: { receiver?: boolean; outbound?: string[] } = {},
): Promise<SinkRig> {
  ensurePostfix();
  const dir = workDir(name);
  const sink: ChildProcess | null = opts.receiver === false ? null : startSink(sinkPort);
  await sleep(300);
  const dns = await new TestDnsServer().start();
  dns.set('sink.test', { MX: [{ preference: 10, exchange: 'mx.sink.test' }] });
  dns.set('mx.sink.test', { A: ['127.0.0.1'] });
  const dataDir = join(dir, 'data');
  const db = openDb(dataDir);
  const now = Date.now();
  migrate(db, now);
  ensureDefaultCustomer(db, now);
  const key = createKey(db, { grant: fullGrant(), customerId: 1, kind: 'production', name: 'bench', now });
  setVerified(db, addDomain(db, { customerId: 1, name: 'example.com', receiving: false, now }).id, now);
  const config = join(dir, 'posthaste.toml');
  writeFileSync(
    config,
    `[server]\nhostname = "bench.local"\ndata_dir = "${dataDir}"\n[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = ""\n[outbound]\nport = ${sinkPort}\n${[...(opts.outbound ?? []), ...POOLS].map((l) => `${l}\n`).join('')}[dns]\nservers = ["${dns.server}"]\n[log]\nlevel = "warn"\n`,
  );
  return {
    dir,
    db,
    key,
    config,
    close: async () => {
      if (db.sqlite.open) db.close();
      await dns.stop();
      sink?.kill();
    },
  };
}
