// An administrator's first hour: the hints the daemon prints run as printed, a command without a
// configuration file says so instead of making a store of its own elsewhere, and a second daemon
// on the same data directory refuses to start while a killed one's lock never blocks a restart.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { DEFAULT_CONFIG_PATH } from '../../src/config/load.js';
import { PID_FILE } from '../../src/store/sqlite/lock.js';
import { BIN, cleanEnv, nodeFlags, spawnDaemon } from '../../support/daemon-process.js';
import { waitFor } from '../../support/wait.js';
import { json, runCli } from '../helpers/cli.js';
import { tempDir, writeTestConfig } from '../helpers/env.js';

/** Runs a command line through the shell, as an administrator pastes it; stdin is written first. */
function shell(line: string, stdin: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', line], { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
    child.stdin.end(stdin);
  });
}

/** `posthaste serve` that is expected to refuse: its exit code and what it said, or what it said if it came up. */
function serveRefused(configPath: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags(), BIN, '--config', configPath, 'serve'], {
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const seen = (d: Buffer) => {
      out += d;
      if (/API on /.test(out)) {
        child.kill('SIGKILL');
        reject(new Error(`a second daemon started on the same data directory: ${out}`));
      }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => resolve({ code, out }));
  });
}

t.test('the hints the daemon prints run as printed and reach its store', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const configPath = writeTestConfig(dir.path, '', undefined, '', '');
  const d = await spawnDaemon(configPath);
  t.teardown(() => void d.child.kill('SIGKILL'));
  const printed = await waitFor(
    'the users add hint',
    () => /create a user with: (.+) users add EMAIL --admin\)/.exec(d.output())?.[1],
  );
  const keyHint = /create a first key with: (.+ keys create --sandbox --full)$/m.exec(d.output())?.[1];
  t.match(printed, `--config ${configPath}`, 'the config it was started with is in the hint');
  t.equal(keyHint, `${printed} keys create --sandbox --full`, 'both hints name the same command');
  const store = /^posthaste: store (.+)$/m.exec(d.output())?.[1];
  t.match(
    store,
    /^url = "postgres/m.test(readFileSync(configPath, 'utf8'))
      ? /^PostgreSQL at postgres:\/\/[^:@]*(:\*\*\*)?@/
      : `SQLite in ${dir.path}`,
    'the store it serves from is named (a URL without its password)',
  );

  const added = await shell(
    `${printed} users add first@example.com --admin --password-stdin`,
    'a password long enough\n',
  );
  t.equal(added.code, 0, added.out);
  const users = json<Array<{ email: string }>>(await runCli(['--config', configPath, 'users', 'list', '--json']));
  t.ok(
    users.some((u) => u.email === 'first@example.com'),
    "the user is in the daemon's store",
  );

  // Each hint shows only while its step is still to be done: a restart after each says so.
  d.child.kill('SIGTERM');
  await d.exited;
  const withUser = await startMessage(t, configPath);
  t.notMatch(withUser.out, /create a user/, 'a user exists: no users add hint');
  t.match(withUser.out, /create a first key with: .+ keys create --sandbox --full$/m, 'still no key: the key hint');
  const key = await shell(`${keyHint} --json`, '');
  t.equal(key.code, 0, key.out);
  withUser.stop();
  await withUser.exited;
  const ready = await startMessage(t, configPath);
  t.notMatch(ready.out, /create a (user|first key)/, 'a user and a key: no hint at all');
  t.match(ready.out, /^posthaste: dashboard on http:\/\/\S+$/m, 'the dashboard line without the hint');
  ready.stop();
});

/** A daemon started again on `configPath`: its start message (one write, so whole once its store line is there). */
async function startMessage(
  t: Test,
  configPath: string,
): Promise<{ out: string; stop: () => void; exited: Promise<unknown> }> {
  const d = await spawnDaemon(configPath);
  t.teardown(() => void d.child.kill('SIGKILL'));
  await waitFor('the start message', () => /^posthaste: store .+$/m.test(d.output()) || undefined);
  return { out: d.output(), stop: () => void d.child.kill('SIGTERM'), exited: d.exited };
}

t.test(
  'no --config and no default file: the command says where it looked and creates nothing',
  { skip: existsSync(DEFAULT_CONFIG_PATH) && `${DEFAULT_CONFIG_PATH} exists here` },
  async (t) => {
    const defaultStore = '/var/lib/posthaste/posthaste.db';
    const before = existsSync(defaultStore);
    for (const args of [
      ['users', 'add', 'x@example.com', '--admin', '--password-stdin'],
      ['keys', 'list'],
      ['serve'],
    ]) {
      const r = await runCli(args);
      t.equal(r.code, 2, args.join(' '));
      t.match(r.stderr, DEFAULT_CONFIG_PATH, 'names the path it looked for');
      t.match(r.stderr, /--config FILE or POSTHASTE_CONFIG=FILE/, 'and how to name one');
      t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    }
    t.equal(existsSync(defaultStore), before, `${defaultStore} was not created`);
    const named = tempDir();
    t.teardown(named.remove);
    const viaEnv = await runCli(['config', 'print', '--json'], { POSTHASTE_CONFIG: writeTestConfig(named.path) });
    t.equal(viaEnv.code, 0, 'POSTHASTE_CONFIG names one');
  },
);

t.test(
  'one daemon per data directory: the second refuses naming the first; the CLI still works; kill -9 leaves no lock behind',
  async (t) => {
    const dir = tempDir();
    t.teardown(dir.remove);
    const configPath = writeTestConfig(dir.path);
    const dataDir = join(dir.path, 'data');
    const first = await spawnDaemon(configPath);
    t.teardown(() => void first.child.kill('SIGKILL'));
    t.equal(
      readFileSync(join(dataDir, PID_FILE), 'utf8').trim(),
      String(first.child.pid),
      'the pid file names the running daemon',
    );

    const second = await serveRefused(configPath);
    t.equal(second.code, 1, 'refused, exit 1');
    t.match(second.out, `server.data_dir ${dataDir} is in use by another posthaste daemon (PID ${first.child.pid})`);

    const status = await runCli(['--config', configPath, 'status', '--json']);
    t.equal(status.code, 0, `the CLI opens the store beside the daemon: ${status.stderr}`);

    first.child.kill('SIGKILL');
    await first.exited;
    const restarted = await spawnDaemon(configPath);
    t.teardown(() => void restarted.child.kill('SIGKILL'));
    t.equal(
      readFileSync(join(dataDir, PID_FILE), 'utf8').trim(),
      String(restarted.child.pid),
      'the restart holds the directory now',
    );
    t.equal((await fetch(`${restarted.apiUrl}/healthz`)).status, 200);
    restarted.child.kill('SIGTERM');
    t.same(await restarted.exited, { code: 0, signal: null });
    t.notOk(existsSync(join(dataDir, PID_FILE)), 'a clean stop removes the pid file');
  },
);
