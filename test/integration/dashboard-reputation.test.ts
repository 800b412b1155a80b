import type { Page } from 'playwright-core';
import t from 'tap';
import { browserAvailable } from '../helpers/browser.js';
import { startDashboardEnv, XSS } from '../helpers/dashboard.js';
import { withPeer } from '../helpers/peers.js';

// A customer's sending reputation on the dashboard (docs/operations.md, "Reputation"), in Debian's
// Chromium against the real daemon: the overview shows the customer's state, rates and thresholds
// to its own users; an administrator pauses (with a reason, someone else's text: escaped) and
// resumes the customer shown.

async function run(): Promise<void> {
  const env = await startDashboardEnv();
  t.teardown(() => env.close());
  const { s, base, browser, watch, ran } = env;
  const page: Page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  watch(page);
  const button = (name: string) => page.getByRole('button', { name, exact: true });

  await t.test('an administrator pauses and resumes the customer shown', async (t) => {
    await env.login(page, 'admin@ops.test', () => undefined);
    await page.goto(`${base}/`);
    t.ok(await page.getByRole('heading', { name: 'Sending reputation' }).isVisible());
    t.ok(await page.getByText('Sending normally.').isVisible());
    t.ok(await page.getByRole('cell', { name: '8 %', exact: true }).isVisible(), 'the pause threshold');
    await page.getByLabel('Reason').fill(`purchased list ${XSS}`);
    await button('Pause').click();
    t.ok(await page.getByText("Paused: this customer's new sends are refused").isVisible());
    t.ok(await page.getByText('Sending is paused').isVisible());
    t.ok(await page.getByText('purchased list <script>', { exact: false }).isVisible(), 'the reason, as text');
    const id = (await s.store.customers.find('default'))!.id;
    t.match(await s.store.reputation.standing(id), { state: 'paused', paused_by: 'administrator' });
    await button('Resume').click();
    t.ok(await page.getByText("Resumed: this customer's held mail goes out").isVisible());
    t.equal((await s.store.reputation.standing(id)).state, 'ok');
    t.same(ran, [], 'nothing ran that should not have');
  });

  await t.test("a customer's own user sees its state and rates, without the buttons", async (t) => {
    const acme = (await s.store.customers.find('acme'))!;
    await s.store.reputation.change({
      customerId: acme.id,
      from: 'ok',
      to: 'paused',
      reason: 'bounce rate 9% (threshold 8%)',
      by: 'reputation',
      event: null,
      now: Date.now(),
    });
    const user = await (await browser.newContext()).newPage();
    watch(user);
    await env.login(user, 'user@acme.test', () => undefined);
    await user.goto(`${base}/`);
    t.ok(await user.getByText('Sending is paused').isVisible());
    t.ok(await user.getByText('bounce rate 9% (threshold 8%)', { exact: false }).isVisible());
    t.ok(await user.getByText('Bounce rate (hard bounces over 0 recipients with an outcome)').isVisible());
    t.equal(await user.getByRole('button', { name: 'Resume' }).count(), 0, 'not for a customer');
    const r = await user.request.post(`${base}/customers/resume`, { form: { customer: 'acme' }, maxRedirects: 0 });
    t.not(r.status(), 303, "the action is an administrator's");
    t.equal((await s.store.reputation.standing(acme.id)).state, 'paused');
  });
}

await withPeer(browserAvailable(), run);
