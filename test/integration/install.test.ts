// The install route of docs/install.md, as an administrator takes it: `npm pack` in a checkout (prepack
// builds what it packs), `npm install -g` of the tarball into a prefix of its own, then the
// installed command serves. And the systemd unit as installed: it verifies, and its start check
// says what is missing from its PATH.
//
// The checkout is copied (the files git knows, as they are in the work tree) so that packing
// builds there and never touches the dist/ this test runs from. Dependencies come from npm's cache
// where it has them (--prefer-offline). better-sqlite3 would compile SQLite for two minutes of
// both cores; its installer (prebuild-install) is handed the binary this checkout built as a
// local prebuild instead, the way it takes one from a release, so its install script still runs.

import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { waitFor } from '../../support/wait.js';
import { tempDir, writeTestConfig } from '../helpers/env.js';

t.setTimeout(900_000);
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const sqlitePkg = JSON.parse(readFileSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8')) as {
  version: string;
};

/** npm as a user runs it: without the npm_* variables of the `npm test` this may run under. */
const userEnv = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|POSTHASTE_|NODE_OPTIONS$|TAP)/i.test(k))),
  ...extra,
});
const npm = (args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
  run('npm', args, { cwd, env: userEnv(env), timeout: 600_000, maxBuffer: 32 * 1024 * 1024 });

const work = tempDir('posthaste-install-');
t.teardown(work.remove);

const checkout = join(work.path, 'checkout');
const { stdout: listed } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
  cwd: ROOT,
  maxBuffer: 32 * 1024 * 1024,
});
for (const file of listed.split('\0').filter(Boolean))
  if (existsSync(join(ROOT, file))) cpSync(join(ROOT, file), join(checkout, file), { recursive: true });
symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));

const tarball = join(work.path, `${pkg.name}-${pkg.version}.tgz`);
const prefix = join(work.path, 'prefix');
const installed = join(prefix, 'lib', 'node_modules', pkg.name);

t.test('npm pack builds what it packs', async (t) => {
  t.notOk(existsSync(join(checkout, 'dist')), 'the copy starts unbuilt, as a fresh clone');
  await npm(['pack', '--pack-destination', work.path], checkout);
  const { stdout } = await run('tar', ['tzf', tarball]);
  const files = stdout.split('\n');
  for (const f of [
    'package/bin/posthaste.js',
    'package/dist/src/cli/main.js',
    'package/dist/src/main.js',
    'package/systemd/posthaste.service',
    'package/docs/operations.md',
  ])
    t.ok(files.includes(f), `the tarball holds ${f}`);
  t.notOk(
    files.some((f) => f.startsWith('package/dist/test/')),
    'no tests in it',
  );
});

t.test(
  'the tarball installs into a prefix of its own, with the install script approved as docs/install.md says',
  async (t) => {
    const prebuilds = join(work.path, 'prebuilds');
    mkdirSync(join(prebuilds, 'build', 'Release'), { recursive: true });
    cpSync(
      join(ROOT, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
      join(prebuilds, 'build', 'Release', 'better_sqlite3.node'),
    );
    await run(
      'tar',
      [
        'czf',
        `better-sqlite3-v${sqlitePkg.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`,
        'build',
      ],
      { cwd: prebuilds },
    );

    const r = await npm(
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--allow-scripts=better-sqlite3',
        tarball,
      ],
      work.path,
      {
        npm_config_better_sqlite3_local_prebuilds: prebuilds,
      },
    );
    const said = r.stdout + r.stderr;
    t.notMatch(said, /install-scripts|not yet covered by allowScripts/, 'no warning about an install script');
    t.ok(
      existsSync(join(installed, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node')),
      "better-sqlite3's install script ran",
    );
    t.ok(existsSync(join(prefix, 'bin', 'posthaste')), 'the posthaste command is in PREFIX/bin');
  },
);

t.test('the installed command serves /healthz and stops on SIGTERM', async (t) => {
  const cfg = writeTestConfig(work.path);
  // The command's #! line finds node on PATH, as under the unit.
  const child = spawn(join(prefix, 'bin', 'posthaste'), ['--config', cfg, 'serve'], {
    env: userEnv({ PATH: `${join(prefix, 'bin')}:${dirname(process.execPath)}:/usr/bin:/bin` }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve((exitCode = code))));
  t.teardown(() => void child.kill('SIGKILL'));
  const api = await waitFor(
    'the installed daemon\'s "API on" line',
    () => {
      if (exitCode !== undefined) throw new Error(`the installed daemon exited (${exitCode}): ${out}`);
      return /API on (http:\/\/\S+)/.exec(out)?.[1];
    },
    60_000,
  );
  const health = await fetch(`${api}/healthz`);
  t.equal(health.status, 200, out);
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'exit 0 after SIGTERM');
});

t.test('the unit as installed: it verifies, and its start check names what its PATH lacks', async (t) => {
  const unit = readFileSync(join(installed, 'systemd', 'posthaste.service'), 'utf8');
  const doc = /^Documentation=file:(\S+)$/m.exec(unit)?.[1];
  t.ok(
    doc?.endsWith(`/lib/node_modules/${pkg.name}/docs/operations.md`),
    `Documentation= is the installed operations guide (${doc})`,
  );
  t.ok(existsSync(join(installed, 'docs', 'operations.md')), 'which the package installs');

  // ExecStartPre=/bin/sh -c '…' with systemd's $$ for a literal $.
  const pre = /^ExecStartPre=\/bin\/sh -c '(.*)'$/m.exec(unit)?.[1]?.replace(/\$\$/g, '$');
  t.ok(pre, 'the unit checks its PATH before starting');
  const check = (PATH: string) =>
    run('/bin/sh', ['-c', pre!], { env: { PATH } }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
  const ok = await check(`${join(prefix, 'bin')}:${dirname(process.execPath)}`);
  t.equal(ok.code, 0, `both found: ${ok.stderr}`);
  const missing = await check('/nonexistent');
  t.equal(missing.code, 1);
  t.match(missing.stderr, /posthaste not found on PATH=\/nonexistent.*Environment=PATH/, missing.stderr);

  const analyze = await run('systemd-analyze', ['--version']).then(
    () => true,
    () => false,
  );
  if (!analyze) return void t.comment('systemd-analyze is not here: the unit is not verified');
  const copy = join(work.path, 'posthaste.service');
  writeFileSync(copy, unit);
  const v = await run('systemd-analyze', ['verify', copy]).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
  t.equal(v.code, 0, v.out);
});
