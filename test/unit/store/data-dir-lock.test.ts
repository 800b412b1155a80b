import t from 'tap';
import { dataDirHeld, lockDataDir } from '../../../src/store/sqlite/lock.js';
import { tempDir } from '../../helpers/env.js';

// Whether a daemon holds the data directory, as the CLI asks it (status: a node is live on SQLite
// only while its daemon holds the directory): no lock file, held, let go. SQLite keeps two
// connections of one process from sharing the lock as it does two processes, so one process shows it.

t.test('dataDirHeld: no daemon ever ran, one holds it, it let go', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  t.equal(dataDirHeld(dir.path), false, 'no lock file: no daemon');
  const lock = lockDataDir(dir.path);
  t.equal(dataDirHeld(dir.path), true, 'held');
  t.equal(dataDirHeld(dir.path), true, 'still held after a probe: the probe took nothing from it');
  t.throws(
    () => lockDataDir(dir.path),
    { message: /is in use by another posthaste daemon/ },
    'a second holder is refused',
  );
  lock.release();
  t.equal(dataDirHeld(dir.path), false, 'let go: the lock file stays, unheld');
  const again = lockDataDir(dir.path);
  t.equal(dataDirHeld(dir.path), true, 'held again by the next start');
  again.release();
});
