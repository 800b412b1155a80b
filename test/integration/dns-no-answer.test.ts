import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { eventsOf, getEmail, sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import {
  DEAD_DNS,
  makeDomain,
  makeKey,
  openTestStore,
  startTestServer,
  tempDir,
  writeTestConfig,
} from '../helpers/env.js';
import type { Json } from '../helpers/http.js';

// A DNS server that gives no answer is not a record that is missing: each place a lookup is
// reported says which, and names dns.servers for the first.

t.test(
  'domains verify: a resolver that does not answer (unreachable, SERVFAIL) is named, and changes nothing',
  async (t) => {
    const dir = tempDir();
    t.teardown(dir.remove);
    const dns = await new TestDnsServer().start();
    t.teardown(() => dns.stop());
    const configFor = (server: string) => writeTestConfig(dir.path, '', server);
    let configPath = configFor(DEAD_DNS);
    const store = await openTestStore(loadConfig({ path: configPath, env: {} }));
    t.teardown(() => store.admin.close());
    await makeDomain(store, 'sure.example'); // verified
    await makeDomain(store, 'new.example', { verified: false });
    const verify = async (name: string) => {
      const r = await runCli(['--config', configPath, 'domains', 'verify', name]);
      const j = await runCli(['--config', configPath, 'domains', 'verify', name, '--json']);
      return { r, j: json<Json>(j) };
    };

    // Unreachable: nothing listens on the DNS port.
    const down = await verify('sure.example');
    t.equal(down.r.code, 1);
    t.match(down.r.stdout, /domain sure\.example: NOT checked, the DNS server did not answer; it stays verified/);
    t.match(
      down.r.stdout,
      /no answer \[verification\] _posthaste\.sure\.example \(seen: the DNS server did not answer the TXT query for _posthaste\.sure\.example \(connection refused\): check that 127\.0\.0\.1:9 answers, or set dns\.servers/,
    );
    t.notMatch(down.r.stdout, /missing/, 'nothing is called missing');
    t.match(down.j, {
      verified: false,
      dns_error: /dns\.servers/,
      checks: [{ purpose: 'verification', found: false, lookup: 'no_answer' }],
    });
    t.not(
      (await store.domains.find('sure.example'))!.verified_at,
      null,
      'a verified domain stays verified (it goes on sending)',
    );

    // SERVFAIL from a server that answers.
    configPath = configFor(dns.server);
    dns.failures.set('_posthaste.new.example', 'SERVFAIL');
    const servfail = await verify('new.example');
    t.equal(servfail.r.code, 1);
    t.match(servfail.r.stdout, /NOT checked, the DNS server did not answer; it stays not verified/);
    t.match(
      servfail.j.dns_error,
      /did not answer the TXT query for _posthaste\.new\.example \(SERVFAIL\): check that 127\.0\.0\.1:\d+ answers, or set dns\.servers/,
    );
    t.equal((await store.domains.find('new.example'))!.verified_at, null);

    // NXDOMAIN and NODATA are answers: the records are missing, said as such, and nothing names dns.servers.
    dns.failures.clear();
    dns.set('_posthaste.new.example', { A: ['192.0.2.1'] }); // the name exists, without TXT
    const missing = await verify('new.example');
    t.equal(missing.j.dns_error, null);
    t.match(missing.r.stdout, /domain new\.example: NOT verified/);
    t.match(
      missing.r.stdout,
      /missing {3}\[verification\] _posthaste\.new\.example \(seen: _posthaste\.new\.example has no TXT record\)/,
    );
    t.match(
      missing.r.stdout,
      /missing {3}\[dkim\] posthaste\._domainkey\.new\.example \(seen: posthaste\._domainkey\.new\.example does not exist \(NXDOMAIN\)\)/,
    );
    t.notMatch(missing.r.stdout, /dns\.servers/);
    t.match(missing.j.checks, [
      { purpose: 'verification', lookup: 'no_record' },
      { purpose: 'dkim', lookup: 'no_domain' },
    ]);
  },
);

t.test(
  'delivery: an MX lookup the resolver does not answer defers (never bounces) and names dns.servers',
  async (t) => {
    const s = await startTestServer('', { manualDelivery: true }); // dns.servers = the dead loopback port
    t.teardown(() => s.close());
    const key = await makeKey(s.store);
    await makeDomain(s.store, 'example.com');
    const id = await sendEmail(s.url, key, {
      from: 'a@example.com',
      to: 'r@example.org',
      subject: 's',
      text_body: 'b',
    });
    await s.daemon.scheduler.drain();
    const m = await getEmail(s.url, key, id);
    t.equal(m.recipients[0].state, 'deferred');
    t.match(eventsOf(m, 'email.deferred')[0].data.response, {
      code: 451,
      classification: 'dns_failure',
      message:
        /the DNS server did not answer the MX query for example\.org \(connection refused\): check that 127\.0\.0\.1:9 answers, or set dns\.servers/,
    });
  },
);
