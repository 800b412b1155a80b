import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../../src/config/load.js';
import { openStore } from '../../../src/store/open.js';
import { withPassword } from '../../../src/store/pg/db.js';
import { addPasswordRole, pgBinDir, startPgCluster } from '../../../support/postgres.js';
import { tempDir, writeTestConfig } from '../../helpers/env.js';

// store.password_file against a server that checks passwords (scram-sha-256): the file's password
// is the one sent, whatever characters it holds, with or without a user in the URL.

const PASSWORD = 'we:ird/p@ss%20#? é';

t.test('withPassword puts the password in any PostgreSQL URL, percent-encoded, replacing one it had', async (t) => {
  const enc = encodeURIComponent(PASSWORD);
  t.equal(withPassword('postgres://h/db', PASSWORD), `postgres://:${enc}@h/db`);
  t.equal(withPassword('postgres://u@h/db', PASSWORD), `postgres://u:${enc}@h/db`);
  t.equal(withPassword('postgres://u:old@h:5432/db', PASSWORD), `postgres://u:${enc}@h:5432/db`);
  t.equal(withPassword('postgres:///db?host=/run/postgresql', PASSWORD), `postgres://:${enc}@/db?host=/run/postgresql`);
  t.equal(
    withPassword('postgresql://u@[::1]:5433/db?sslmode=disable', PASSWORD),
    `postgresql://u:${enc}@[::1]:5433/db?sslmode=disable`,
  );
});

t.test(
  "a daemon's store opens with the password from store.password_file",
  { skip: !pgBinDir() && 'PostgreSQL server binaries not installed' },
  async (t) => {
    const cluster = await startPgCluster();
    t.teardown(() => cluster.remove());
    // Passwords checked for this role over TCP; everything else stays trusted.
    const url = await addPasswordRole(cluster, 'ph_pw', PASSWORD);

    const dir = tempDir();
    t.teardown(dir.remove);
    const open = (file: string) => {
      const path = writeTestConfig(dir.path, `[store]\nurl = "${url}"\npassword_file = "${file}"\n`);
      return openStore(loadConfig({ path, env: {} }));
    };

    const good = join(dir.path, 'password');
    writeFileSync(good, `${PASSWORD}\n`, { mode: 0o600 });
    const store = open(good);
    await store.admin.migrate(Date.now());
    await store.customers.ensureDefault(Date.now());
    t.ok(await store.customers.find('default'), 'connected as ph_pw, wrote and read');
    await store.admin.close();

    const bad = join(dir.path, 'wrong');
    writeFileSync(bad, 'not the password\n', { mode: 0o600 });
    const refused = open(bad);
    await t.rejects(
      refused.admin.migrate(Date.now()),
      /password authentication failed for user "ph_pw"/,
      'a wrong password is refused: the server does check',
    );
    await refused.admin.close();
  },
);
