import { execFile, execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/**
 * A real PostgreSQL for the tests: Debian's server binaries, a private cluster in a temporary
 * directory (initdb and pg_ctl as the `postgres` user when run as root), listening on loopback
 * only at a free port; never the machine's own cluster. `npm test` starts one for the whole run
 * (test/suite.ts) and each test takes a database of its own in it;
 * a test that stops or restarts the server starts a cluster of its own.
 */

export interface PgCluster {
  url: string;
  port: number;
  dir: string;
  /** Stops the server (fast shutdown); `start` brings it back on the same port and data. */
  stop(): void;
  start(): void;
  /**
   * `pg_ctl restart -m fast`, without blocking the event loop (daemons in this process go on
   * serving meanwhile); resolves once the server accepts connections again.
   */
  restart(): Promise<void>;
  /** Stops it and removes its directory. */
  remove(): void;
}

/** The newest PostgreSQL server's binaries on this machine, or undefined. */
export function pgBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const asRoot = process.getuid?.() === 0;

/** Runs a server binary as the `postgres` user when we are root (initdb refuses root). */
function runPg(bin: string, args: string[]): void {
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
}

/** runPg, in the background. */
function runPgAsync(bin: string, args: string[]): Promise<void> {
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return new Promise((resolve, reject) =>
    execFile(cmd, argv, { encoding: 'utf8', timeout: 60_000 }, (e, stdout, stderr) =>
      e ? reject(new Error(`${bin} ${args.join(' ')} failed: ${stderr || stdout || e.message}`)) : resolve(),
    ),
  );
}

/**
 * Starts a private cluster. `durable`: fsync on, as in production (the benchmarks); the tests
 * run with fsync off, which changes nothing they can see but the time. `settings`: more server
 * settings, each `name=value` (a benchmark loading pg_stat_statements).
 */
export async function startPgCluster(opts: { durable?: boolean; settings?: string[] } = {}): Promise<PgCluster> {
  const bin = pgBinDir();
  if (!bin)
    throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'posthaste-pg-'));
  chmodSync(dir, 0o700);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  runPg(join(bin, 'initdb'), [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'postgres',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
    '--no-sync',
  ]);
  const port = await freePort();
  const options = [
    `-c listen_addresses=127.0.0.1`,
    `-c port=${port}`,
    `-c unix_socket_directories=${dir}`,
    '-c max_connections=200',
    '-c shared_buffers=64MB',
    ...(opts.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
    ...(opts.settings ?? []).map((s) => `-c ${s}`),
  ].join(' ');
  const ctl = (args: string[]) => runPg(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'server.log'), ...args]);
  const start = () => ctl(['-o', options, '-w', '-t', '60', 'start']);
  const stop = () => ctl(['-m', 'fast', '-w', 'stop']);
  start();
  let running = true;
  const restart = () =>
    runPgAsync(join(bin, 'pg_ctl'), [
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-o',
      options,
      '-m',
      'fast',
      '-w',
      '-t',
      '60',
      'restart',
    ]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    stop: () => {
      if (running) stop();
      running = false;
    },
    start: () => {
      if (!running) start();
      running = true;
    },
    restart,
    remove: () => {
      try {
        if (running) stop();
      } finally {
        running = false;
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * A role that logs in with `password`, checked by scram-sha-256 over TCP on 127.0.0.1 (pg_hba),
 * owning a database of its name, in `cluster` (every other role stays trusted). Its URL, without
 * the password.
 */
export async function addPasswordRole(cluster: PgCluster, role: string, password: string): Promise<string> {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password.replace(/'/g, "''")}'`);
    await admin.query(`CREATE DATABASE ${role} OWNER ${role}`);
    const hba = join(cluster.dir, 'data', 'pg_hba.conf');
    // Overwritten in place: the file keeps its owner (the server's user) when we are root.
    writeFileSync(hba, `host all ${role} 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);
    await admin.query('SELECT pg_reload_conf()');
  } finally {
    await admin.end();
  }
  return `postgres://${role}@127.0.0.1:${cluster.port}/${role}`;
}

/** Where the run's shared cluster is described (written by test/suite.ts). */
export const SHARED_CLUSTER_FILE = fileURLToPath(new URL('../../.tap/pg-cluster.json', import.meta.url));

let own: Promise<PgCluster> | undefined;

/** The URL of the run's shared cluster, or of one started for this process alone. */
async function clusterUrl(): Promise<string> {
  if (existsSync(SHARED_CLUSTER_FILE)) {
    const { url, dir } = JSON.parse(readFileSync(SHARED_CLUSTER_FILE, 'utf8')) as { url: string; dir: string };
    if (postmasterRunning(dir)) return url;
  }
  own ??= startPgCluster().then((c) => {
    process.once('exit', () => c.remove());
    return c;
  });
  return (await own).url;
}

/** Whether the cluster in `dir` has a running server (its postmaster.pid names a live process). */
function postmasterRunning(dir: string): boolean {
  try {
    const pid = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A new empty database on the shared cluster; its URL, and how to drop it. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const base = await clusterUrl();
  const name = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: base.replace(/\/postgres$/, `/${name}`),
    drop: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect().catch(() => undefined);
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await c.end().catch(() => undefined);
    },
  };
}

/** A new empty database on the shared cluster, dropped at teardown; its URL. */
export async function testDatabase(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  return db.url;
}

/** For the run's `before` script: starts the shared cluster and says where it is. */
export async function startSharedCluster(): Promise<void> {
  stopSharedCluster(); // one left by a run that was killed
  const c = await startPgCluster();
  mkdirSync(dirname(SHARED_CLUSTER_FILE), { recursive: true });
  writeFileSync(SHARED_CLUSTER_FILE, JSON.stringify({ url: c.url, dir: c.dir }));
}

/** For the run's `after` script: stops the shared cluster and removes it. */
export function stopSharedCluster(): void {
  if (!existsSync(SHARED_CLUSTER_FILE)) return;
  const { dir } = JSON.parse(readFileSync(SHARED_CLUSTER_FILE, 'utf8')) as { dir: string };
  rmSync(SHARED_CLUSTER_FILE, { force: true });
  const bin = pgBinDir();
  if (bin && postmasterRunning(dir)) {
    try {
      runPg(join(bin, 'pg_ctl'), ['-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    } catch {
      /* already gone */
    }
  }
  rmSync(dir, { recursive: true, force: true });
}
