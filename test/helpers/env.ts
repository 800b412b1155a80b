import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { openDb, migrate, type Db } from '../../src/store/db.js';
import { migrations } from '../../src/store/migrations/index.js';
import { ensureDefaultCustomer, findCustomer, addCustomer } from '../../src/store/customers.js';
import { createKey, type KeyKind } from '../../src/store/keys.js';
import { addDomain, findDomain, setVerified } from '../../src/store/domains.js';
import { dnsRecords } from '../../src/domain/dns-records.js';
import type { TestDnsServer } from './dns-server.js';
import { startDaemon, type Daemon, type DaemonOptions } from '../../src/main.js';
import { silentLogger } from '../../src/lib/logger.js';
import { acceptMessage, type AcceptResult } from '../../src/store/messages.js';

export function tempDir(prefix = 'posthaste-test-'): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A config for tests: a temp data dir, port-0 listeners, loopback everything; extra TOML appended. */
/** A loopback port where nothing answers: DNS through it fails fast and never leaves the machine. */
export const DEAD_DNS = '127.0.0.1:9';

/** `dashboard`: undefined leaves the dashboard off; a string turns it on at a port-0 listener, with these extra lines. */
export function writeTestConfig(dir: string, extraToml = '', dnsServer = DEAD_DNS, smtpExtra = '', dashboard?: string): string {
  const path = join(dir, 'posthaste.toml');
  writeFileSync(
    path,
    `[server]\nhostname = "mx.test.posthaste"\ndata_dir = "${join(dir, 'data')}"\n` +
      `[api]\nlisten = "127.0.0.1:0"\n[smtp]\nlisten = "127.0.0.1:0"\nreturn_path_domain = "bounces.test.posthaste"\n${smtpExtra}` +
      `[dns]\nservers = ["${dnsServer}"]\n` +
      (dashboard === undefined ? '[dashboard]\nlisten = ""\n' : `[dashboard]\nlisten = "127.0.0.1:0"\n${dashboard}\n`) +
      extraToml,
  );
  return path;
}

export function testConfig(dir: string, extraToml = '', dnsServer = DEAD_DNS): Config {
  return loadConfig({ path: writeTestConfig(dir, extraToml, dnsServer), env: {} });
}

/** Opens the store the daemon uses (WAL lets both hold it). */
export function openTestDb(config: Config): Db {
  const db = openDb(config.server.data_dir);
  migrate(db, Date.now());
  ensureDefaultCustomer(db, Date.now());
  return db;
}

export function customerId(db: Db, name = 'default'): number {
  return (findCustomer(db, name) ?? addCustomer(db, name, Date.now())).id;
}

export function makeKey(db: Db, kind: KeyKind = 'production', customer = 'default'): string {
  return createKey(db, { customerId: customerId(db, customer), kind, name: 'test', now: Date.now() }).key;
}

export function makeDomain(db: Db, name: string, opts: { customer?: string; verified?: boolean } = {}): void {
  const d = addDomain(db, { customerId: customerId(db, opts.customer), name, receiving: false, now: Date.now() });
  if (opts.verified !== false) setVerified(db, d.id, Date.now());
}

export interface TestServer {
  config: Config;
  /** The TOML file the server was started from (for the CLI). */
  configPath: string;
  daemon: Daemon;
  db: Db;
  url: string;
  close(): Promise<void>;
}

export async function startTestServer(extraToml = '', opts: DaemonOptions & { dns?: string; smtp?: string; dashboard?: string } = {}): Promise<TestServer> {
  const dir = tempDir();
  const configPath = writeTestConfig(dir.path, extraToml, opts.dns, opts.smtp, opts.dashboard);
  const config = loadConfig({ path: configPath, env: {} });
  const daemon = await startDaemon(config, silentLogger(), opts);
  const db = openTestDb(config);
  return {
    config,
    configPath,
    daemon,
    db,
    url: daemon.apiUrl,
    async close() {
      db.close();
      await daemon.stop();
      dir.remove();
    },
  };
}

/**
 * A migrated store in a temporary directory, with the default customer and an API key row
 * `key_x` (for store-level tests that insert messages directly); removed when the test ends.
 */
/**
 * A store with the migrations up to `version` applied (and the default customer), as an older
 * release left it: for the tests of the migrations after it.
 */
export function storeAtVersion(t: { teardown(fn: () => void): void }, version: number): Db {
  const dir = tempDir();
  t.teardown(dir.remove);
  const db = openDb(dir.path);
  t.teardown(() => db.close());
  db.sqlite.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  for (const m of migrations.filter((m) => m.version <= version)) {
    db.sqlite.exec(m.sql);
    db.sqlite.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name);
  }
  ensureDefaultCustomer(db, 0);
  return db;
}

/** The versions of the migrations after `version`, in order: what migrate() applies to a store at it. */
export function versionsAfter(version: number): number[] {
  return migrations.filter((m) => m.version > version).map((m) => m.version);
}

export function storeWithKey(t: { teardown(fn: () => void): void }): Db {
  const dir = tempDir();
  t.teardown(dir.remove);
  const db = openDb(dir.path);
  t.teardown(() => db.close());
  migrate(db, 0);
  ensureDefaultCustomer(db, 0);
  db.sqlite.prepare("INSERT INTO api_keys (id, customer_id, kind, hash, created_at) VALUES ('key_x', 1, 'production', x'00', 0)").run();
  return db;
}

/**
 * Publishes a sender domain's TXT records (verification, DKIM, SPF, DMARC) on the loopback DNS
 * server, where a receiving MX (mailauth, dkimpy) looks; returns them by name.
 */
export function publishDomainTxt(db: Db, dns: TestDnsServer, name: string): Record<string, string> {
  const d = findDomain(db, name);
  if (!d) throw new Error(`no domain ${name}`);
  const published: Record<string, string> = {};
  for (const r of dnsRecords(
    { name: d.name, verificationToken: d.verification_token, dkimSelector: d.dkim_selector, dkimPublicKey: d.dkim_public_key },
    { hostname: 'mx.test.posthaste', returnPathDomain: 'bounces.test.posthaste' },
  ))
    if (r.type === 'TXT') {
      dns.set(r.name, { TXT: [r.text!] });
      published[r.name] = r.text!;
    }
  return published;
}

/**
 * A message stored straight through the store (no API, no validation), for store-level tests:
 * one recipient row per address, due at `now`, with `request` as its stored body.
 */
export function storeMessage(db: Db, input: { id: string; now: number; recipients: Array<{ address: string; domain: string }>; request?: string }): AcceptResult {
  return acceptMessage(db, {
    customerId: 1,
    apiKeyId: 'key_x',
    sandbox: false,
    messageId: input.id,
    fromHeader: 'a',
    senderDomain: 'e',
    subject: 's',
    metadata: {},
    request: input.request ?? '{}',
    recipients: input.recipients.map((r) => ({ ...r, field: 'to' as const })),
    now: input.now,
  });
}
