/// <reference lib="dom" />

import t from 'tap';
import { browserAvailable } from '../helpers/browser.js';
import { startDashboardEnv, XSS } from '../helpers/dashboard.js';
import { storedReport } from '../helpers/dmarc.js';
import { makeDomain } from '../helpers/env.js';
import { withPeer } from '../helpers/peers.js';

// A domain's page shows the DMARC aggregate reports kept about it, in a real browser: per day and
// source, the two numbers to act on (no address is ours here: outbound.source_addresses is empty;
// `dmarc show` is tested with ours marked); a reporter's name is someone else's words, shown as
// text and never run.

async function run(): Promise<void> {
  const env = await startDashboardEnv();
  t.teardown(() => env.close());
  const { s, base, browser, watch } = env;
  await makeDomain(s.store, 'shop.acme.test', { customer: 'acme' });
  const now = Date.now();
  const report = (org: string, reportId: string, domain: string) =>
    storedReport(org, reportId, domain, now - 86_400_000, now - 1000);

  await s.store.dmarc.keep({
    reports: [report(XSS, 'r1', 'shop.acme.test')],
    unreadable: [],
    raw: Buffer.alloc(0),
    receivedAt: now,
  });

  await t.test("the domain's page: its reports, each source, the numbers to act on", async (t) => {
    const user = await (await browser.newContext()).newPage();
    watch(user);
    await env.login(user, 'user@acme.test', () => undefined);
    await user.goto(`${base}/domains/shop.acme.test`);
    const text = (await user.locator('#dmarc').textContent()) ?? '';
    t.match(text, /1244 messages reported/);
    t.match(text, /Our own mail failing DMARC: 0/);
    t.match(text, /From addresses that are not ours: 1244/);
    t.match(text, "console.log('XSS-RAN')", "the reporter's name is shown as text");
    const rows = await user.locator('#dmarc tbody tr').allTextContents();
    t.match(rows.find((r) => r.includes('192.0.2.10')) ?? '', /no\s*1200/, 'each source with its messages');
    t.equal(rows.length, 3);
    t.same(env.ran, [], 'nothing of it ran');
  });
}

await withPeer(browserAvailable(), run);
