import t from 'tap';
import { startSettings } from '../../src/daemon/context.js';
import { scheduleDomainRecheck } from '../../src/daemon/domain-recheck.js';
import { domainRecords } from '../../src/domain-setup/records.js';
import { systemClock } from '../../src/lib/clock.js';
import { createResolver } from '../../src/lib/dns.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TestDnsServer, zoneStrings } from '../../support/dns-server.js';
import { waitFor } from '../../support/wait.js';
import { tempDir, testConfig } from '../helpers/env.js';
import { freshStore, readEvents } from '../helpers/stores.js';

// The daemon's step: every dns.recheck_interval the verified domains are checked again through
// the loopback DNS server, and a domain whose DKIM record is removed is verified no longer, its
// event written and `onEvents` told; dns.recheck_interval = 0 schedules nothing.

t.test('the schedule re-checks verified domains and tells of the events it wrote', async (t) => {
  const dns = await new TestDnsServer().start();
  t.teardown(() => dns.stop());
  const dir = tempDir();
  t.teardown(dir.remove);
  const base = testConfig(dir.path, '', dns.server);
  const config = { ...base, dns: { ...base.dns, recheck_interval: 100 } };
  const store = await freshStore(t, 'sqlite');
  const c = (await store.customers.find('default'))!;
  const d = await store.domains.add({ customerId: c.id, name: 'shop.example', receiving: false, now: 1 });
  const records = domainRecords(d, config, Date.now());
  for (const r of records)
    if (r.purpose === 'verification' || r.purpose === 'dkim') dns.set(r.name, { TXT: [zoneStrings(r.value)] });
  await store.domains.setVerified(d.id, 1);

  let told = 0;
  const ctx = { config, log: silentLogger(), clock: systemClock, settings: startSettings(config) };
  const recheck = scheduleDomainRecheck(ctx, store, createResolver([dns.server]), () => told++);
  t.teardown(() => recheck.stop());
  await waitFor('a re-check', () => dns.queries.some((q) => q.name.startsWith('posthaste._domainkey.shop.example')));
  t.not((await store.domains.find('shop.example'))!.verified_at, null, 'records in place: still verified');

  dns.zone.delete(records.find((r) => r.purpose === 'dkim')!.name);
  await waitFor('the domain unverified', async () => (await store.domains.find('shop.example'))!.verified_at === null);
  const events = await readEvents(store, 1);
  t.same(
    events.map((e) => e.type),
    ['domain.verification_failed'],
  );
  await waitFor('onEvents told', () => told > 0);

  const off = scheduleDomainRecheck(
    { ...ctx, config: { ...config, dns: { ...config.dns, recheck_interval: 0 } } },
    store,
    createResolver([dns.server]),
    () => undefined,
  );
  await off.stop();
});
