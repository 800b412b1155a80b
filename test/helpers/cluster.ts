import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { type Logger, silentLogger } from '../../src/lib/logger.js';
import { type Daemon, type DaemonOptions, startDaemon } from '../../src/main.js';
import type { Store } from '../../src/store/store.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';
import { openTestStore, TEST_ENGINE, tempDir, testStoreUrl, writeTestConfig } from './env.js';
import { type TestSql, testSql } from './sql.js';

/**
 * Several nodes on one PostgreSQL (docs/operations.md, "Several nodes"), for the cluster tests:
 * a loopback DNS server naming a loopback MX for the test's domains, a database of the test's
 * own, and nodes each with its own directory and configuration file on it (started in this
 * process, or left for the test to start as processes). All of it stops when the file ends.
 *
 * The cluster tests run on PostgreSQL only: `clusterSkipped()` says so on SQLite.
 */

/** On SQLite: a pass saying how to run it; true then, and the test file does nothing more. */
export function clusterSkipped(why = 'several nodes on one database'): boolean {
  if (TEST_ENGINE === 'postgres') return false;
  t.pass(`PostgreSQL only (${why}): run with POSTHASTE_TEST_STORE=postgres`);
  return true;
}

export interface ClusterOptions {
  /** Domains whose MX is the loopback MX (each as `mx.<domain>`, at 127.0.0.1). */
  mxDomains?: string[];
  /** The database (a cluster of the test's own, which it restarts); a new database of the suite's unless given. */
  url?: string;
  /** `[outbound]` lines of every node, after the MX's port. */
  outbound?: string;
  /** More TOML sections of every node, after `[outbound]`. */
  toml?: string;
}

export interface NodeOptions {
  /** More `[outbound]` lines of this node, after the cluster's. */
  outbound?: string;
  /** More TOML sections of this node, after the cluster's. */
  toml?: string;
}

export interface ClusterNode {
  name: string;
  config: Config;
  /** Its configuration file (the CLI's `--config`). */
  path: string;
  daemon: Daemon;
}

export interface Cluster {
  url: string;
  dns: TestDnsServer;
  mx: TestMx;
  /** A node's configuration file in a directory of its own, not started (a test that spawns it as a process). */
  configure(name: string, opts?: NodeOptions): { name: string; path: string; config: Config };
  /** A node started in this process (its name is POSTHASTE_SERVER_NODE_NAME), stopped when the file ends. */
  node(name: string, opts?: NodeOptions & { daemon?: DaemonOptions; log?: Logger }): Promise<ClusterNode>;
  /** The test's own handle on the shared store, migrated, with the default customer; closed when the file ends. */
  store(): Promise<Store>;
  /** The test's own SQL on the shared store (after `store()`); closed when the file ends. */
  sql(): TestSql;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const dns = await new TestDnsServer().start();
  const mx = await new TestMx('127.0.0.1').start();
  t.teardown(async () => {
    await Promise.all([dns.stop(), mx.stop()]);
  });
  for (const domain of opts.mxDomains ?? []) {
    dns.set(domain, { MX: [{ preference: 10, exchange: `mx.${domain}` }] });
    dns.set(`mx.${domain}`, { A: ['127.0.0.1'] });
  }
  const url = opts.url ?? (await testStoreUrl(t));
  const dir = tempDir();
  t.teardown(dir.remove);
  const configure = (name: string, o: NodeOptions = {}) => {
    const d = join(dir.path, name);
    mkdirSync(d);
    const toml =
      `[outbound]\nport = ${mx.port}\n${opts.outbound ?? ''}${o.outbound ?? ''}` + `${opts.toml ?? ''}${o.toml ?? ''}`;
    const path = writeTestConfig(d, toml, dns.server, '', undefined, url);
    return { name, path, config: loadConfig({ path, env: { POSTHASTE_SERVER_NODE_NAME: name } }) };
  };
  let shared: Promise<Store> | undefined;
  let sql: TestSql | undefined;
  return {
    url,
    dns,
    mx,
    configure,
    async node(name, o = {}) {
      const c = configure(name, o);
      const daemon = await startDaemon(c.config, o.log ?? silentLogger(), o.daemon ?? {});
      t.teardown(() => daemon.stop());
      return { ...c, daemon };
    },
    store() {
      shared ??= (async () => {
        const store = await openTestStore(configure('test-store').config);
        t.teardown(() => store.admin.close());
        return store;
      })();
      return shared;
    },
    sql() {
      if (!sql) {
        sql = testSql(configure('test-sql').config);
        t.teardown(() => sql?.close());
      }
      return sql;
    },
  };
}
