/// <reference lib="dom" />

import t from 'tap';
import { browserAvailable } from '../helpers/browser.js';
import { startDashboardEnv, XSS } from '../helpers/dashboard.js';
import { makeDomain } from '../helpers/env.js';
import { withPeer } from '../helpers/peers.js';

// The deliverability doctor's last run on the dashboard, in a real browser (Debian's Chromium
// through playwright-core), and in /metrics: an administrator's overview shows this node's
// failing checks with their fixes, a customer's user sees their domains' checks and not the
// node's, a domain's page lists every check of the domain, and what the DNS said (a blocklist's
// reason here: someone else's words) is shown as text, never run. The node's address comes from
// server.hostname's A record (outbound.source_addresses is empty).

async function run(): Promise<void> {
  const env = await startDashboardEnv(
    // No run by itself: the first is this test's, whatever the machine's load.
    '[doctor]\ndnsbl = ["bl.test"]\ninterval = "0s"\n[metrics]\nenabled = true\nlisten = "127.0.0.1:0"\n',
  );
  t.teardown(() => env.close());
  const { s, base, dns, browser, watch } = env;
  dns.set('mx.test.posthaste', { A: ['127.0.0.9'] });
  dns.set('9.0.0.127.in-addr.arpa', { PTR: ['mx.test.posthaste'] });
  dns.set('9.0.0.127.bl.test', { A: ['127.0.0.2'], TXT: [XSS] });
  await makeDomain(s.store, 'shop.acme.test', { customer: 'acme' });

  const admin = await (await browser.newContext()).newPage();
  watch(admin);
  await env.login(admin, 'admin@ops.test', () => undefined);

  await t.test('before the first run, the overview says so', async (t) => {
    t.equal(s.daemon.doctor.last(), null);
    await admin.goto(`${base}/`);
    t.match(await admin.locator('#doctor').textContent(), /Not checked yet/);
  });

  await t.test('a run now', async (t) => {
    const started = Date.now();
    t.ok(await s.daemon.doctor.run(), 'the run ended with a report');
    t.ok(Date.now() - started < 5000, `it took ${Date.now() - started} ms`);
  });

  await t.test("an administrator's overview: the node's failing checks, each with its fix", async (t) => {
    await admin.goto(`${base}/`);
    const text = (await admin.locator('#doctor').textContent()) ?? '';
    t.match(text, /127\.0\.0\.9 is listed on bl\.test: 127\.0\.0\.2/);
    t.match(text, "console.log('XSS-RAN')", "the list's reason is shown as text");
    t.match(text, /Fix: find why 127\.0\.0\.9 was listed/);
    t.notMatch(text, /127\.0\.0\.9 → mx\.test\.posthaste/, 'passing checks are only counted');
    t.match(text, /\d+ checks? pass/);
    t.same(env.ran, [], 'nothing of it ran');
  });

  await t.test(
    "a customer's user: their domain's checks, not the node's; the domain page lists them all",
    async (t) => {
      const user = await (await browser.newContext()).newPage();
      watch(user);
      await env.login(user, 'user@acme.test', () => undefined);
      const overview = await user.locator('#doctor').textContent();
      t.notMatch(overview, /bl\.test/, "the node's checks are the administrators'");
      t.match(overview, /_dmarc\.shop\.acme\.test/);
      await user.goto(`${base}/domains/shop.acme.test`);
      const page = await user.locator('#doctor').textContent();
      t.same(await user.locator('#doctor tbody tr td:first-child').allTextContents(), [
        'dkim',
        'spf',
        'dmarc',
        'alignment',
        'return_path_mx',
      ]);
      t.match(page, /Fix: publish the TXT record _dmarc\.shop\.acme\.test with the value "v=DMARC1; p=none"/);
      t.match(page, /Fix: publish the CNAME record bounces\.shop\.acme\.test pointing to bounces\.test\.posthaste\./);
      t.same(env.ran, []);
    },
  );

  await t.test('/metrics: a gauge per check, 1 passing and 0 failing, and when it ran', async (t) => {
    const text = await (await fetch(s.daemon.metricsUrl!)).text();
    t.match(text, 'posthaste_doctor_check{check="reverse_dns",domain="",subject="127.0.0.9"} 1');
    t.match(text, 'posthaste_doctor_check{check="dnsbl",domain="",subject="127.0.0.9 on bl.test"} 0');
    t.match(text, 'posthaste_doctor_check{check="dmarc",domain="shop.acme.test",subject="_dmarc.shop.acme.test"} 0');
    t.match(text, /posthaste_doctor_last_run_timestamp_seconds \d{10}/);
  });
}

await withPeer(browserAvailable(), run);
