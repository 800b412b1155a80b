// The send path's "unchecked key" protocol (docs/architecture.md, "Keys"; src/api/send-gate.ts),
// end to end through the API on each engine: a send takes its key from the cache without reading
// the auth epoch, and a key revoked since the cache last looked is still refused, by the commit,
// which answers the moved epoch, so the cache is dropped. A send path that bypasses the gate
// (reads the epoch first, commits without the epoch, or never reconciles it) fails here.
import t from 'tap';
import type { ApiDeps } from '../../../src/api/deps.js';
import { buildApi } from '../../../src/api/server.js';
import { loadConfig } from '../../../src/config/load.js';
import { live, sendSettings } from '../../../src/config/settings.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { MemoryBudget } from '../../../src/lib/memory-budget.js';
import { AuthCache } from '../../../src/store/auth-cache.js';
import type { WebhookService } from '../../../src/webhooks/service.js';
import { tempDir, writeTestConfig } from '../../helpers/env.js';
import { ENGINES, freshStore, sender } from '../../helpers/stores.js';

const valid = { from: 'hello@example.com', to: 'alice@example.org', subject: 'Hello', text_body: 'Hi Alice' };

for (const engine of ENGINES)
  t.test(
    `${engine}: a key revoked after it was cached is refused at the commit, and the cache is dropped`,
    async (t) => {
      const store = await freshStore(t, engine);
      const who = await sender(store);
      // Every read of auth_epoch the API makes, counted.
      let epochReads = 0;
      const keys = {
        ...store.keys,
        authEpoch: () => {
          epochReads++;
          return store.keys.authEpoch();
        },
      };
      const auth = new AuthCache({ keys, domains: store.domains });
      const dir = tempDir();
      t.teardown(() => dir.remove());
      const config = loadConfig({ path: writeTestConfig(dir.path), env: {} });
      const deps: ApiDeps = {
        store,
        auth,
        config,
        send: live(sendSettings(config)),
        budget: new MemoryBudget(64 * 1024 * 1024),
        clock: { now: () => Date.now() },
        log: silentLogger(),
        lifecycle: { shuttingDown: false, listenersUp: () => true },
        // The send endpoints never reach the webhook service; building the API only keeps a reference.
        webhooks: undefined as unknown as WebhookService,
      };
      const app = buildApi(deps);
      t.teardown(() => app.close());
      const send = () =>
        app.inject({
          method: 'POST',
          url: '/api/v1/emails',
          headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json' },
          payload: JSON.stringify(valid),
        });

      t.equal((await send()).statusCode, 202, 'a first send: the key and the domain are cached');
      epochReads = 0;
      t.equal((await send()).statusCode, 202, 'a second send');
      t.equal(epochReads, 0, 'the send path reads no epoch before its commit');

      t.ok(await store.keys.revoke(who.keyId, Date.now()));
      const before = auth.epoch;
      t.equal((await auth.key(who.key, false))?.id, who.keyId, 'the cache has not seen the revocation');
      const refused = await send();
      t.equal(refused.statusCode, 401, 'the commit refuses the revoked key');
      t.equal(refused.json().error.code, 'unauthorized');
      t.equal(epochReads, 0, 'refused by the commit itself, not by a read of the epoch before it');
      t.not(auth.epoch, before, 'the epoch the commit answered is taken');
      t.equal(
        await auth.key(who.key, false),
        undefined,
        'the cache was dropped: the next unchecked lookup reads the store, and the key is revoked',
      );
      t.equal(
        (await store.messages.search({ customerId: who.customerId, limit: 10 })).length,
        2,
        'nothing stored for the refused send',
      );
    },
  );
