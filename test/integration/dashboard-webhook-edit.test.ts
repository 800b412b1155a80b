/// <reference lib="dom" />

import t from 'tap';
import { browserAvailable } from '../helpers/browser.js';
import { startDashboardEnv } from '../helpers/dashboard.js';
import { customerId } from '../helpers/env.js';
import { withPeer } from '../helpers/peers.js';

// A webhook endpoint changed in the dashboard, in a real browser (Debian's Chromium through
// playwright-core): its URL, event types and enabled state saved through the rules the API's
// PATCH uses, a bad URL refused with the reason, and its signing secret rotated and shown once.

async function run(): Promise<void> {
  const env = await startDashboardEnv();
  t.teardown(() => env.close());
  const { s, base, rx, browser, watch } = env;
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  watch(page);
  await env.login(page, 'admin@ops.test', () => undefined);
  const endpoint = await s.store.webhooks.createEndpoint({
    customerId: await customerId(s.store),
    url: rx.url('/before'),
    events: null,
    description: 'first',
    secret: 'whsec_before',
    now: Date.now(),
  });

  await t.test('url, events and enabled saved; a bad URL refused with its reason', async (t) => {
    await page.goto(`${base}/webhooks/${endpoint.id}`);
    await page.getByLabel('URL').fill(rx.url('/after'));
    await page.getByRole('checkbox', { name: 'email.bounced', exact: true }).check();
    await page.getByRole('checkbox', { name: 'domain.verification_failed', exact: true }).check();
    await page.getByRole('checkbox', { name: 'Enabled', exact: true }).uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(/notice=endpoint-updated/);
    t.match(await s.store.webhooks.getEndpoint(endpoint.id), {
      url: rx.url('/after'),
      events: ['email.bounced', 'domain.verification_failed'],
      enabled: false,
      description: 'first',
    });
    t.ok(await page.getByText('Endpoint saved.').isVisible());
    t.ok(
      await page.getByRole('checkbox', { name: 'email.bounced', exact: true }).isChecked(),
      'the form shows what is saved',
    );
    t.notOk(await page.getByRole('checkbox', { name: 'Enabled', exact: true }).isChecked());

    await page.getByLabel('URL').fill('ftp://nowhere.example/');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForLoadState();
    t.match(await page.getByRole('alert').textContent(), /url/);
    t.equal((await s.store.webhooks.getEndpoint(endpoint.id))!.url, rx.url('/after'), 'nothing saved');

    await page.goto(`${base}/webhooks/${endpoint.id}`);
    await page.getByRole('checkbox', { name: 'email.bounced', exact: true }).uncheck();
    await page.getByRole('checkbox', { name: 'domain.verification_failed', exact: true }).uncheck();
    await page.getByRole('checkbox', { name: 'Enabled', exact: true }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(/notice=endpoint-updated/);
    t.match(await s.store.webhooks.getEndpoint(endpoint.id), { events: null, enabled: true, disabledReason: null });
  });

  await t.test('the secret rotated: shown once, the old one kept signing for the grace period', async (t) => {
    await page.goto(`${base}/webhooks/${endpoint.id}`);
    await page.getByRole('button', { name: 'Rotate signing secret' }).click();
    await page.waitForURL(`${base}/webhooks/${endpoint.id}`);
    const shown = await page.locator('#new-secret').textContent();
    const e = (await s.store.webhooks.getEndpoint(endpoint.id))!;
    t.equal(shown, e.secret, 'the new secret is shown');
    t.match(e.secret, /^whsec_/);
    t.equal(e.previousSecret, 'whsec_before');
    t.ok(e.previousSecretExpiresAt! > Date.now() + 23 * 3_600_000, 'the old one signs on for 24 h');
    await page.reload();
    t.equal(await page.locator('#new-secret').count(), 0, 'and never again');
    t.notMatch(await page.content(), e.secret);
  });
}

await withPeer(browserAvailable(), run);
