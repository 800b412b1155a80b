import { dirname } from 'node:path';
import t from 'tap';
import { fullGrant } from '../../../src/domain/key-scopes.js';
import { AuthCache } from '../../../src/store/auth-cache.js';
import { pgStore } from '../../../src/store/pg/index.js';
import { openDb } from '../../../src/store/sqlite/db.js';
import { sqliteStore } from '../../../src/store/sqlite/index.js';
import { ENGINES, freshStore } from '../../helpers/stores.js';

for (const engine of ENGINES)
  t.test(`${engine}: the cache sees changes made through another connection on the next lookup`, async (t) => {
    const api = await freshStore(t, engine, 0);
    // As the CLI, or another node, would: a connection of its own.
    const cli = engine === 'sqlite' ? sqliteStore(openDb(dirname(api.location))) : pgStore(api.location, { max: 1 });
    t.teardown(() => cli.admin.close());
    const cache = new AuthCache(api);

    const k = await cli.keys.create({ grant: fullGrant(), customerId: 1, kind: 'production', name: '', now: 0 });
    t.equal((await cache.key(k.key))?.id, k.id);
    t.equal((await cache.key(k.key))?.id, k.id, 'cached');
    await cli.keys.revoke(k.id, 1);
    t.equal(await cache.key(k.key), undefined, 'revoked: refused on the next lookup');
    t.equal(await cache.key(`ph_live_${'x'.repeat(40)}`), undefined);

    const d = await cli.domains.add({ customerId: 1, name: 'example.com', receiving: false, now: 0 });
    t.equal((await cache.domain('example.com'))?.verified_at, null);
    await cli.domains.setVerified(d.id, 5);
    t.equal((await cache.domain('example.com'))?.verified_at, 5, 'verification seen at once');
  });

for (const engine of ENGINES)
  t.test(`${engine}: a lookup that went to the store while the epoch moved is not remembered`, async (t) => {
    const api = await freshStore(t, engine, 0);
    const k = await api.keys.create({ grant: fullGrant(), customerId: 1, kind: 'production', name: '', now: 0 });
    // The store's answer held back until the test lets it go: the key read while still valid.
    let read!: () => void;
    const wasRead = new Promise<void>((r) => (read = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const keys = {
      ...api.keys,
      authenticate: async (presented: string) => {
        const info = await api.keys.authenticate(presented);
        read();
        await gate;
        return info;
      },
    };
    const cache = new AuthCache({ keys, domains: api.domains });
    await cache.refresh();
    const lookup = cache.key(k.key, false);
    await wasRead;
    await api.keys.revoke(k.id, 1);
    await cache.refresh(); // another request saw the epoch move meanwhile
    release();
    t.equal((await lookup)?.id, k.id, 'the lookup answers what it read');
    keys.authenticate = api.keys.authenticate;
    t.equal(
      await cache.key(k.key, false),
      undefined,
      'and did not cache it: the next unchecked lookup reads the store, and the key is revoked',
    );
  });
