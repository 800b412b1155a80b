import type { Page } from 'playwright-core';
import t from 'tap';
import { browserAvailable } from '../helpers/browser.js';
import { startDashboardEnv } from '../helpers/dashboard.js';
import { makeDomain, makeKey } from '../helpers/env.js';
import { request } from '../helpers/http.js';
import { withPeer } from '../helpers/peers.js';

// The queue on a message's page (retry, hold, release, delete) and the held destinations on the
// overview, in Debian's Chromium against the real daemon: good.test's MX defers slow@ (451) and
// takes the rest (test/helpers/dashboard.ts).

async function run(): Promise<void> {
  const env = await startDashboardEnv();
  t.teardown(() => env.close());
  const { s, base, browser, watch, ran } = env;
  await makeDomain(s.store, 'shop.test');
  const apiKey = await makeKey(s.store);
  const page: Page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  watch(page);
  const button = (name: string) => page.getByRole('button', { name, exact: true });
  const stateOf = (address: string) =>
    s.sql.value(
      "SELECT CASE WHEN held_at IS NULL THEN state ELSE 'held' END FROM recipients WHERE address = ?",
      address,
    );

  await t.test("a message's waiting recipients: retry now, hold, release, delete", async (t) => {
    await env.login(page, 'admin@ops.test', (shown) => t.ok(shown, 'signed out: sent to the login page'));
    const r = await request(`${s.url}/api/v1/emails`, {
      key: apiKey,
      body: { from: 'shop@shop.test', to: ['slow@good.test', 'fast@good.test'], subject: 'Order', text_body: 'hi' },
    });
    const id = r.body.message_id as string;
    await s.daemon.scheduler.drain();
    t.equal(await stateOf('slow@good.test'), 'deferred');
    await page.goto(`${base}/messages/${encodeURIComponent(id)}`);
    t.ok(await page.getByText('1 recipient waiting to be sent.').isVisible());
    t.equal(await button('Release').count(), 0, 'nothing held: no release');
    await button('Hold').click();
    t.ok(await page.getByText('Held: the waiting recipients are not tried until released.').isVisible());
    t.ok(await page.locator('.badge.held').isVisible(), 'the recipient is shown held');
    t.equal(await stateOf('slow@good.test'), 'held');
    t.same([await button('Hold').count(), await button('Retry now').count()], [0, 0], 'held: release or delete only');
    await button('Release').click();
    t.ok(await page.getByText('Released: the held recipients are due now.').isVisible());
    await s.daemon.scheduler.drain();
    t.equal(await s.sql.value("SELECT attempts FROM recipients WHERE address = 'slow@good.test'"), 2, 'tried at once');
    await page.reload();
    await button('Retry now').click();
    t.ok(await page.getByText('Retried: the deferred recipients are due now.').isVisible());
    t.ok(
      ((await s.sql.value("SELECT next_attempt_at FROM recipients WHERE address = 'slow@good.test'")) as number) <=
        Date.now(),
      'due now',
    );
    await button('Delete what has not been sent').click();
    t.ok(await page.getByText('Deleted: the waiting recipients are canceled and will not be sent.').isVisible());
    t.equal(await stateOf('slow@good.test'), 'canceled');
    t.equal(await stateOf('fast@good.test'), 'delivered', 'the delivered one is never changed');
    t.equal(await page.getByText('waiting to be sent').count(), 0, 'nothing waits: no buttons');
  });

  await t.test('held destinations on the overview, for administrators', async (t) => {
    await s.store.queue.apply('hold', { destination: 'good.test' }, Date.now(), false);
    await page.goto(`${base}/`);
    t.ok(await page.getByRole('heading', { name: 'Destinations held' }).isVisible());
    t.ok(await page.getByRole('cell', { name: 'good.test', exact: true }).isVisible());
    const user = await (await browser.newContext()).newPage();
    await env.login(user, 'user@acme.test', () => undefined);
    t.equal(await user.getByRole('heading', { name: 'Destinations held' }).count(), 0, "not a customer's user");
    await s.store.queue.apply('release', { destination: 'good.test' }, Date.now(), false);
    await page.reload();
    t.equal(await page.getByRole('heading', { name: 'Destinations held' }).count(), 0, 'released: gone');
    t.same(ran, [], 'nothing ran that should not have');
  });
}

await withPeer(browserAvailable(), run);
