// The store holds DKIM private keys, key hashes, webhook secrets and message bodies: what the
// processes write of it is readable by their owner only, under an administrator's umask 022 as
// under the unit's 0027. The CLI and the daemon run as child processes, which inherit the umask.

import { chmodSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { spawnDaemon } from '../../support/daemon-process.js';
import { waitFor } from '../../support/wait.js';
import { runCli } from '../helpers/cli.js';
import { tempDir, writeTestConfig } from '../helpers/env.js';
import { request } from '../helpers/http.js';

process.umask(0o022);
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

t.test('store, -wal, -shm, backup and data directory under umask 022', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const configPath = writeTestConfig(dir.path);
  const data = join(dir.path, 'data');
  const created = await runCli(['--config', configPath, 'keys', 'create', '--sandbox', '--full']);
  t.equal(created.code, 0, created.stderr);
  t.equal(mode(data), '0700', 'the data directory the CLI made');
  t.equal(mode(join(data, 'posthaste.db')), '0600', 'the store the CLI made');

  const d = await spawnDaemon(configPath);
  t.teardown(() => void d.child.kill('SIGKILL'));
  const key = /ph_test_\w+/.exec(created.stdout)![0];
  t.equal(
    (await request(`${d.apiUrl}/api/v1/emails`, { key, body: {} })).status,
    422,
    'the daemon writes as it answers',
  );
  await waitFor('the -wal and -shm files', () => {
    try {
      return statSync(join(data, 'posthaste.db-wal')) && statSync(join(data, 'posthaste.db-shm'));
    } catch {
      return false;
    }
  });
  for (const f of ['posthaste.db', 'posthaste.db-wal', 'posthaste.db-shm']) t.equal(mode(join(data, f)), '0600', f);

  const backup = join(dir.path, 'backup.db');
  const b = await runCli(['--config', configPath, 'db', 'backup', backup]);
  t.equal(b.code, 0, b.stderr);
  t.equal(mode(backup), '0600', 'the backup');
  const again = await runCli(['--config', configPath, 'db', 'backup', backup]);
  t.not(again.code, 0, 'an existing file is not overwritten');
  t.equal(mode(backup), '0600');
});

t.test('a store an older release left readable by all is narrowed to 0640 when opened', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const configPath = writeTestConfig(dir.path);
  const data = join(dir.path, 'data');
  t.equal((await runCli(['--config', configPath, 'db', 'migrate'])).code, 0);
  chmodSync(join(data, 'posthaste.db'), 0o644);
  const r = await runCli(['--config', configPath, 'status']);
  t.equal(r.code, 0, r.stderr);
  t.equal(mode(join(data, 'posthaste.db')), '0640');
});
