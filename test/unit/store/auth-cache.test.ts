import t from 'tap';
import { openDb, migrate } from '../../../src/store/db.js';
import { ensureDefaultCustomer } from '../../../src/store/customers.js';
import { createKey, revokeKey } from '../../../src/store/keys.js';
import { addDomain, setVerified } from '../../../src/store/domains.js';
import { AuthCache } from '../../../src/store/auth-cache.js';
import { tempDir } from '../../helpers/env.js';

t.test('the cache sees changes made through another connection on the next lookup', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const api = openDb(dir.path);
  migrate(api, 0);
  ensureDefaultCustomer(api, 0);
  const cli = openDb(dir.path); // as the CLI would, in another process
  t.teardown(() => {
    api.close();
    cli.close();
  });
  const cache = new AuthCache(api);

  const k = createKey(cli, { customerId: 1, kind: 'production', name: '', now: 0 });
  t.equal(cache.key(k.key)?.id, k.id);
  t.equal(cache.key(k.key)?.id, k.id, 'cached');
  revokeKey(cli, k.id, 1);
  t.equal(cache.key(k.key), undefined, 'revoked: refused on the next lookup');
  t.equal(cache.key('ph_live_' + 'x'.repeat(40)), undefined);

  const d = addDomain(cli, { customerId: 1, name: 'example.com', receiving: false, now: 0 });
  t.equal(cache.domain('example.com')?.verified_at, null);
  setVerified(cli, d.id, 5);
  t.equal(cache.domain('example.com')?.verified_at, 5, 'verification seen at once');
});
