import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { dnsRecords } from '../../src/domain/dns-records.js';
import type { EventType } from '../../src/domain/events.js';
import { fullGrant } from '../../src/domain/key-scopes.js';
import { eventId } from '../../src/lib/ids.js';
import { type Logger, silentLogger } from '../../src/lib/logger.js';
import { type Daemon, type DaemonOptions, startDaemon } from '../../src/main.js';
import type { AcceptResult, KeyKind } from '../../src/store/model.js';
import { openStore } from '../../src/store/open.js';
import { ensureDefaultCustomer } from '../../src/store/sqlite/customers.js';
import { type Db, migrate, openDb } from '../../src/store/sqlite/db.js';
import { acceptMessage } from '../../src/store/sqlite/messages.js';
import { migrations } from '../../src/store/sqlite/migrations/index.js';
import type { Store } from '../../src/store/store.js';
import type { TestDnsServer } from '../../support/dns-server.js';
import { createTestDatabase } from '../../support/postgres.js';
import { type TestSql, testSql } from './sql.js';

export function tempDir(prefix = 'posthaste-test-'): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A config for tests: a temp data dir, port-0 listeners, loopback everything; extra TOML appended. */
/** A loopback port where nothing answers: DNS through it fails fast and never leaves the machine. */
export const DEAD_DNS = '127.0.0.1:9';

/** `dashboard`: undefined leaves the dashboard off; a string turns it on at a port-0 listener, with these extra lines. */
export function writeTestConfig(
  dir: string,
  extraToml = '',
  dnsServer = DEAD_DNS,
  smtpExtra = '',
  dashboard?: string,
  storeUrl = '',
  apiExtra = '',
): string {
  const path = join(dir, 'posthaste.toml');
  writeFileSync(
    path,
    `[server]\nhostname = "mx.test.posthaste"\ndata_dir = "${join(dir, 'data')}"\n` +
      (storeUrl ? `[store]\nurl = "${storeUrl}"\npool_size = 4\n` : '') +
      `[api]\nlisten = "127.0.0.1:0"\n${apiExtra}[smtp]\nlisten = "127.0.0.1:0"\nreturn_path_domain = "bounces.test.posthaste"\n${smtpExtra}` +
      `[dns]\nservers = ["${dnsServer}"]\n` +
      (dashboard === undefined ? '[dashboard]\nlisten = ""\n' : `[dashboard]\nlisten = "127.0.0.1:0"\n${dashboard}\n`) +
      extraToml,
  );
  return path;
}

export function testConfig(dir: string, extraToml = '', dnsServer = DEAD_DNS): Config {
  return loadConfig({ path: writeTestConfig(dir, extraToml, dnsServer), env: {} });
}

/**
 * The store engine the integration tests run on: SQLite, or PostgreSQL when
 * POSTHASTE_TEST_STORE=postgres (`npm test` runs them on both; support/postgres.ts).
 */
export const TEST_ENGINE: 'sqlite' | 'postgres' =
  process.env.POSTHASTE_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

export async function customerId(store: Store, name = 'default'): Promise<number> {
  return ((await store.customers.find(name)) ?? (await store.customers.add(name, Date.now()))).id;
}

export async function makeKey(store: Store, kind: KeyKind = 'production', customer = 'default'): Promise<string> {
  return (
    await store.keys.create({
      grant: fullGrant(),
      customerId: await customerId(store, customer),
      kind,
      name: 'test',
      now: Date.now(),
    })
  ).key;
}

export async function makeDomain(
  store: Store,
  name: string,
  opts: { customer?: string; verified?: boolean; receiving?: boolean } = {},
): Promise<void> {
  const d = await store.domains.add({
    customerId: await customerId(store, opts.customer),
    name,
    receiving: opts.receiving ?? false,
    now: Date.now(),
  });
  if (opts.verified !== false) await store.domains.setVerified(d.id, Date.now());
}

export interface TestServer {
  config: Config;
  /** The TOML file the server was started from (for the CLI). */
  configPath: string;
  daemon: Daemon;
  /** The test's own handle on the daemon's store (either engine), and its own SQL on it. */
  store: Store;
  sql: TestSql;
  url: string;
  close(): Promise<void>;
}

/** A daemon on the test engine's store (a database of its own on PostgreSQL), in a temporary directory. */
/** `log`: the daemon's logger (silent unless given: a test that reads the log lines hands in its own). */
/** startTestServer's options: the daemon's, and `dns` (the resolver), `smtp` (more [smtp] lines), `dashboard` (on, with these lines), `log`. */
export type StartOptions = DaemonOptions & {
  dns?: string;
  smtp?: string;
  dashboard?: string;
  log?: Logger;
  /** More [api] lines. */
  api?: string;
};

export async function startTestServer(extraToml = '', opts: StartOptions = {}): Promise<TestServer> {
  const dir = tempDir();
  const pg = TEST_ENGINE === 'postgres' ? await createTestDatabase() : undefined;
  const configPath = writeTestConfig(dir.path, extraToml, opts.dns, opts.smtp, opts.dashboard, pg?.url, opts.api);
  const config = loadConfig({ path: configPath, env: {} });
  const daemon = await startDaemon(config, opts.log ?? silentLogger(), opts);
  const store = openStore(config);
  const sql = testSql(config);
  return {
    config,
    configPath,
    daemon,
    store,
    sql,
    url: daemon.apiUrl,
    async close() {
      await sql.close();
      await store.admin.close();
      await daemon.stop();
      await pg?.drop();
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
  db.sqlite.exec(
    'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
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
  db.sqlite
    .prepare(
      "INSERT INTO api_keys (id, customer_id, kind, hash, created_at) VALUES ('key_x', 1, 'production', x'00', 0)",
    )
    .run();
  return db;
}

/**
 * Publishes a sender domain's TXT records (verification, DKIM, SPF, DMARC) on the loopback DNS
 * server, where a receiving MX (mailauth, dkimpy) looks; returns them by name.
 */
export async function publishDomainTxt(
  store: Store,
  dns: TestDnsServer,
  name: string,
): Promise<Record<string, string>> {
  const d = await store.domains.find(name);
  if (!d) throw new Error(`no domain ${name}`);
  const published: Record<string, string> = {};
  for (const r of dnsRecords(
    {
      name: d.name,
      verificationToken: d.verification_token,
      dkimSelector: d.dkim_selector,
      dkimPublicKey: d.dkim_public_key,
    },
    {
      hostname: 'mx.test.posthaste',
      returnPathDomain: 'bounces.test.posthaste',
      returnPathLabel: 'bounces',
      spfSources: [],
    },
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
export function storeMessage(
  db: Db,
  input: { id: string; now: number; recipients: Array<{ address: string; domain: string }>; request?: string },
): AcceptResult {
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

/** The store a configuration names, migrated, with the default customer: a test's own handle beside a daemon it started as a process. */
export async function openTestStore(config: Config): Promise<Store> {
  const store = openStore(config);
  await store.admin.migrate(Date.now());
  await store.customers.ensureDefault(Date.now());
  return store;
}

/**
 * The `[store] url` a test's configuration gets on the test engine: '' (SQLite in the data
 * directory), or a PostgreSQL database of its own, dropped at teardown.
 */
export async function testStoreUrl(t: { teardown(fn: () => unknown): void }): Promise<string> {
  if (TEST_ENGINE === 'sqlite') return '';
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  return db.url;
}

/** An event written straight into the outbox (as a state change would write it), for the webhook tests. */
export async function recordTestEvent(
  s: Pick<TestServer, 'sql'>,
  e: { customerId: number; type: EventType; data: Record<string, unknown>; now: number },
): Promise<string> {
  const id = eventId(e.now);
  const body = JSON.stringify({ id, type: e.type, timestamp: new Date(e.now).toISOString(), data: e.data });
  await s.sql.run(
    'INSERT INTO events (id, customer_id, type, created_at, body) VALUES (?, ?, ?, ?, ?)',
    id,
    e.customerId,
    e.type,
    e.now,
    body,
  );
  return id;
}
