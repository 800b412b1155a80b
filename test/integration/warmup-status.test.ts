import type { Page } from 'playwright-core';
import t from 'tap';
import { DEFAULT_WARMUP_SCHEDULE } from '../../src/domain/warmup.js';
import { browserAvailable } from '../helpers/browser.js';
import { json, runCli } from '../helpers/cli.js';
import { startDashboardEnv, XSS } from '../helpers/dashboard.js';
import { withPeer } from '../helpers/peers.js';

// Each source address's warm-up and today's use (docs/delivery.md, "Warm-up"), where an
// administrator looks: `posthaste status` (text and --json) and the dashboard's overview, in
// Debian's Chromium against the real daemon. The use is the store's, as the scheduler's
// reservations leave it; a destination's name is someone else's text (escaped).

const DAY = 86_400_000;
const today = new Date().toISOString().slice(0, 10);
const yesterday = new Date(Date.now() - DAY).toISOString().slice(0, 10);
const POOLS = `
[[outbound.pools]]
name = "transactional"
addresses = [ { ip = "127.0.0.2", ehlo = "mta2.warmup.test" } ]

[[outbound.pools]]
name = "bulk"
addresses = [ { ip = "127.0.0.3", ehlo = "mta3.warmup.test", warmup_start = "${yesterday}" } ]
`;
const cap = DEFAULT_WARMUP_SCHEDULE[1]!;

async function run(): Promise<void> {
  const env = await startDashboardEnv(POOLS);
  t.teardown(() => env.close());
  const { s, base, browser, watch, ran } = env;
  // Today's use, as reservations leave it: the warming address to three destinations.
  await s.store.warmup.reserve(today, [
    { ip: '127.0.0.3', destination: 'google.com', n: cap - 10, cap },
    { ip: '127.0.0.3', destination: 'outlook.com', n: 4, cap },
    { ip: '127.0.0.3', destination: XSS, n: 1, cap },
  ]);
  const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);

  await t.test('status: each address, its warm-up day or full volume, and its use today', async (t) => {
    const text = await cli('status');
    t.equal(text.code, 0, text.stderr);
    t.match(
      text.stdout,
      `address:   127.0.0.2 (pool transactional, ehlo mta2.warmup.test): full volume; nothing sent today\n`,
    );
    t.match(
      text.stdout,
      `address:   127.0.0.3 (pool bulk, ehlo mta3.warmup.test): warm-up day 2 of 28, ${cap} per destination today; today ${cap - 5} sent to 3 destinations, most ${cap - 10}/${cap} to google.com\n`,
    );
    const j = await cli('status', '--json');
    t.equal(j.code, 0, j.stderr);
    t.same(json<{ addresses: unknown }>(j).addresses, [
      {
        pool: 'transactional',
        ip: '127.0.0.2',
        ehlo: 'mta2.warmup.test',
        warmup_start: null,
        day: null,
        days: 28,
        cap: null,
        destinations: 0,
        sent: 0,
        highest: null,
      },
      {
        pool: 'bulk',
        ip: '127.0.0.3',
        ehlo: 'mta3.warmup.test',
        warmup_start: yesterday,
        day: 2,
        days: 28,
        cap,
        destinations: 3,
        sent: cap - 5,
        highest: { destination: 'google.com', used: cap - 10 },
      },
    ]);
  });

  await t.test("the overview shows an administrator each address's warm-up and use today", async (t) => {
    const page: Page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    watch(page);
    await env.login(page, 'admin@ops.test', () => undefined);
    await page.goto(`${base}/`);
    t.ok(await page.getByRole('heading', { name: 'Source addresses' }).isVisible());
    // The addresses' table (the doctor's checks, below it, name the addresses too).
    const table = page.locator('table', { hasText: 'Cap per destination today' });
    const row = (ip: string) => table.getByRole('row').filter({ hasText: ip });
    t.same(await row('127.0.0.3').getByRole('cell').allTextContents(), [
      '127.0.0.3',
      'bulk',
      'mta3.warmup.test',
      'day 2 of 28',
      String(cap),
      `${cap - 5} messages to 3 destinations`,
      `google.com: ${cap - 10} of ${cap}`,
    ]);
    t.same(await row('127.0.0.2').getByRole('cell').allTextContents(), [
      '127.0.0.2',
      'transactional',
      'mta2.warmup.test',
      'full volume',
      'none',
      '0 messages to 0 destinations',
      '-',
    ]);
    // The destination someone else named, most used: shown as text, never run.
    await s.store.warmup.reserve(today, [{ ip: '127.0.0.2', destination: XSS, n: 3, cap: 1000 }]);
    await page.reload();
    t.match(await row('127.0.0.2').getByRole('cell').last().textContent(), `${XSS}: 3`);
    t.same(ran, [], 'nothing ran that should not have');
    const user = await (await browser.newContext()).newPage();
    await env.login(user, 'user@acme.test', () => undefined);
    await user.goto(`${base}/`);
    t.equal(
      await user.getByRole('heading', { name: 'Source addresses' }).count(),
      0,
      "an administrator's, not a customer's",
    );
  });
}

await withPeer(browserAvailable(), run);
