/// <reference lib="dom" />

import type { Page } from 'playwright-core';
import t from 'tap';
import { domainRecords } from '../../src/domain-setup/records.js';
import { browserAvailable } from '../helpers/browser.js';
import { startDashboardEnv } from '../helpers/dashboard.js';
import { customerId, makeDomain, makeKey } from '../helpers/env.js';
import { request } from '../helpers/http.js';
import { withPeer } from '../helpers/peers.js';

// The dashboard's details a new user meets on the first day, in a real browser (Debian's
// Chromium through playwright-core): the icon, a deletion that asks first, test events and
// replays told apart in the delivery log, a failing webhook's last answer and next attempt on
// the message's page, and DNS record names that wrap between labels on a phone.

/** Where each line of an element's text ends, as the browser laid it out: the text before each break. */
function lineBreaks(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((sel) => {
    const el = document.querySelector(sel)!;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    const out: string[] = [];
    let seen = '';
    let top: number | null = null;
    for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null)
      for (let i = 0; i < node.length; i++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const y = range.getClientRects()[0]?.top ?? 0;
        if (top !== null && y > top + 2) out.push(seen);
        top = y;
        seen += node.data[i];
      }
    return out;
  }, selector);
}

async function run(): Promise<void> {
  const env = await startDashboardEnv();
  t.teardown(() => env.close());
  const { s, base, rx, browser, watch } = env;
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  watch(page);
  await env.login(page, 'admin@ops.test', () => undefined);

  await t.test('/favicon.ico is an icon, cached like the other static files; pages name it', async (t) => {
    const r = await fetch(`${base}/favicon.ico`);
    t.equal(r.status, 200);
    t.equal(r.headers.get('content-type'), 'image/svg+xml');
    t.equal(r.headers.get('cache-control'), 'public, max-age=300');
    t.match(await r.text(), /^<svg /);
    t.equal(await page.locator('link[rel=icon]').getAttribute('href'), '/static/favicon.svg');
    t.equal((await fetch(`${base}/static/favicon.svg`)).status, 200);
  });

  await t.test(
    'a domain page wraps record names between labels, values where needed, and gives values the room',
    async (t) => {
      const name = 'a-rather-long-subdomain-for-mail.customer-department.example';
      await makeDomain(s.store, name, { verified: false });
      const d = (await s.store.domains.find(name))!;
      const dkim = domainRecords(d, s.config, Date.now()).findIndex((r) => r.purpose === 'dkim');
      for (const width of [375, 1280]) {
        await page.setViewportSize({ width, height: 900 });
        await page.goto(`${base}/domains/${name}`);
        await page.screenshot({ path: `/tmp/posthaste-domain-${width}.png`, fullPage: true });
        const names = await page.locator('td.dns-name code').count();
        t.ok(names >= 5, `${width} px: every record's name`);
        for (let i = 0; i < names; i++)
          for (const before of await lineBreaks(page, `table.dns tbody tr:nth-child(${i + 1}) td.dns-name code`))
            t.ok(
              /[.-]$/.test(before),
              `${width} px: a name breaks after a dot or a hyphen, not in "${before.slice(-12)}…"`,
            );
        // The value has the room: at least half the window's width on a phone, more than the name on a desktop.
        const box = async (sel: string) => (await page.locator(sel).first().boundingBox())!.width;
        const valueWidth = await box(`td:has(#rec-${dkim})`);
        t.ok(
          width === 375 ? valueWidth >= width / 2 : valueWidth > (await box('td.dns-name')),
          `${width} px: the value is ${Math.round(valueWidth)} px wide`,
        );
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        t.ok(overflow <= 0, `${width} px: nothing wider than the window (${overflow} px over)`);
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    },
  );

  let endpoint = { id: '' };

  await t.test(
    "an endpoint's deliveries mark test events and replays; a failing webhook on the message page",
    async (t) => {
      endpoint = await s.store.webhooks.createEndpoint({
        customerId: await customerId(s.store),
        url: rx.url('/details'),
        events: null,
        description: '',
        secret: 'whsec_details',
        now: Date.now(),
      });
      await makeDomain(s.store, 'shop.test');
      const key = await makeKey(s.store);
      rx.script.set('/details', [500]);
      const r = await request(`${s.url}/api/v1/emails`, {
        key,
        body: { from: 'shop@shop.test', to: 'dave@good.test', subject: 'Order', text_body: 'hi' },
      });
      t.equal(r.status, 202);
      await s.daemon.scheduler.drain();
      await s.daemon.dispatcher.drain();
      await page.goto(`${base}/messages/${encodeURIComponent(r.body.message_id)}`);
      const hook = page.locator('li', { hasText: 'email.delivered' }).locator('small', { hasText: 'webhook' });
      const said = (await hook.first().textContent()) ?? '';
      t.match(said, /pending after 1 attempt/);
      t.match(said, /last: HTTP 500/, "the last attempt's status");
      t.match(said, /next attempt (in|within) /, 'when the next is due');

      await page.goto(`${base}/webhooks/${endpoint.id}`);
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.getByRole('button', { name: 'Replay' }).first().click();
      const rows = page.locator('tbody tr');
      const badges = await rows.evaluateAll((trs) =>
        trs.map((tr) => tr.querySelector('td:nth-child(2) .badge')?.textContent ?? ''),
      );
      t.same(badges.slice(0, 3).sort(), ['', 'replay', 'test'], 'the replay and the test are marked; the event is not');
    },
  );

  await t.test('Delete endpoint asks first, as revoking a key does', async (t) => {
    await page.goto(`${base}/webhooks/${endpoint.id}`);
    await page.getByRole('link', { name: 'Delete endpoint…' }).click();
    await page.waitForURL(`${base}/webhooks/${endpoint.id}/delete`);
    t.ok(await page.getByText('its delivery log goes with it').isVisible(), 'says what goes');
    t.ok(await s.store.webhooks.getEndpoint(endpoint.id), 'nothing deleted by asking');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(`${base}/webhooks/${endpoint.id}`);
    t.ok(await s.store.webhooks.getEndpoint(endpoint.id), 'nor by canceling');
    await page.getByRole('link', { name: 'Delete endpoint…' }).click();
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.waitForURL(/\/webhooks(\?|$)/);
    t.equal(await s.store.webhooks.getEndpoint(endpoint.id), undefined, 'deleted once confirmed');
  });
}

await withPeer(browserAvailable(), run);
