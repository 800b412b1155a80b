/// <reference lib="dom" />

import type { Page } from 'playwright-core';
import t from 'tap';
import { domainRecords } from '../../src/domain-setup/records.js';
import { quiet } from '../../support/wait.js';
import { browserAvailable } from '../helpers/browser.js';
import { startDashboardEnv, XSS } from '../helpers/dashboard.js';
import { customerId, makeDomain } from '../helpers/env.js';
import { request } from '../helpers/http.js';
import { withPeer } from '../helpers/peers.js';
import { RawSmtp } from '../helpers/smtp-client.js';

// The dashboard in a real browser (Debian's Chromium through playwright-core), for an admin and
// for a customer's user, with hostile input everywhere it shows something. A message's content
// and the sandbox are in dashboard-content.test.ts.

async function run(): Promise<void> {
  const env = await startDashboardEnv();
  t.teardown(() => env.close());
  const { s, base, dns, rx, browser, ran, watch, shot, unlabelled } = env;
  const login = (page: Page, email: string) =>
    env.login(page, email, (shown) => t.ok(shown, 'signed out: sent to the login page'));
  const T = env.tracker.url;
  // What the customer's user must not reach: the default customer's objects.
  await makeDomain(s.store, 'example.com');
  await s.store.domains.add({
    customerId: await customerId(s.store),
    name: 'in.example.com',
    receiving: true,
    now: Date.now(),
  });

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  watch(page);
  let apiKey = '';
  let bouncedId = '';

  await t.test('an admin logs in, creates a key and sends with it through the API', async (t) => {
    await login(page, 'admin@ops.test');
    t.ok(await page.getByRole('heading', { name: 'Overview' }).isVisible());
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('web app');
    // No kind is preselected: the form does not go without a choice, and the server makes none.
    const keys = async () => (await s.sql.value('SELECT COUNT(*) FROM api_keys')) as number;
    const before = await keys();
    t.equal(await page.locator('input[name=kind]:checked').count(), 0, 'no kind chosen in advance');
    await page.getByRole('button', { name: 'Create key' }).click();
    t.equal(await page.locator('input[name=kind]:invalid').count(), 2, 'the browser asks for a kind');
    await page.evaluate(() => {
      for (const el of Array.from(document.querySelectorAll('input[name=kind], input[name=scopes]')))
        el.removeAttribute('required');
    });
    await page.getByRole('button', { name: 'Create key' }).click();
    t.ok(
      await page
        .getByText('Choose the kind of key: sandbox (nothing is sent) or production (sends real mail).')
        .isVisible(),
      'without a kind the server refuses',
    );
    t.equal(await keys(), before, 'and creates no key');
    // Nor are the scopes: without a choice the browser asks, and the server refuses.
    await page.getByLabel('Name').fill('web app');
    await page.getByLabel(/Production/).check();
    t.equal(await page.locator('input[name=scopes]:checked').count(), 0, 'no scopes chosen in advance');
    await page.evaluate(() => {
      for (const el of Array.from(document.querySelectorAll('input[name=scopes]'))) el.removeAttribute('required');
    });
    await page.getByRole('button', { name: 'Create key' }).click();
    t.ok(await page.getByText('Choose the scopes of the key').isVisible(), 'without scopes the server refuses');
    t.equal(await keys(), before, 'and creates no key');
    await page.getByLabel('Name').fill('web app');
    await page.getByLabel(/Production/).check();
    await page.getByLabel(/Full/).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    apiKey = (await page.locator('#new-key').textContent())!;
    t.match(apiKey, /^ph_live_[0-9A-Za-z]{40}$/, 'the key is shown once');
    await shot(page, 'keys');
    await page.reload();
    t.equal(await page.locator('#new-key').count(), 0, 'and not again on reload');
    t.ok(await page.getByRole('cell', { name: /^send emails:read .*keys:write$/ }).isVisible(), 'its scopes are shown');
    await page.getByLabel('Name').fill('reader');
    await page.getByLabel(/Sandbox/).check();
    await page.getByLabel(/Only the scopes ticked/).check();
    await page.getByLabel('emails:read').check();
    await page.getByLabel('From domains').fill('shop.test');
    await page.getByRole('button', { name: 'Create key' }).click();
    t.ok(await page.getByRole('cell', { name: 'emails:read', exact: true }).isVisible(), 'a key of chosen scopes');
    t.ok(await page.getByText('from shop.test').isVisible(), 'and its restriction');
    t.same(await unlabelled(page), [], 'every control has a label');
  });

  await t.test('adds a domain, sees its records, verifies it against DNS', async (t) => {
    await page.getByRole('link', { name: 'Domains' }).click();
    // A refusal that depends on the input is said by the page the POST answers, not through the URL.
    await page.getByLabel('Domain', { exact: true }).fill('not a domain!');
    await page.getByRole('button', { name: 'Add domain' }).click();
    t.ok(
      await page
        .getByRole('alert')
        .filter({ hasText: /^That is not a domain name: / })
        .isVisible(),
      'why the name was refused',
    );
    t.equal(new URL(page.url()).search, '', 'and nothing of it in the URL');
    await page.getByLabel('Domain', { exact: true }).fill('shop.test');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.waitForURL(/\/domains\/shop\.test/);
    const d = (await s.store.domains.find('shop.test'))!;
    const records = domainRecords(d, s.config, Date.now());
    for (const r of records)
      t.ok(await page.getByText(r.value, { exact: true }).isVisible(), `the ${r.purpose} record is shown`);
    for (const r of records) if (r.type === 'TXT') dns.set(r.name, { TXT: [r.text!] });
    await page.getByRole('button', { name: 'Verify now' }).click();
    t.ok(await page.getByText('Verified: every required record is published.').isVisible());
    await shot(page, 'domain');
    // Sends with the key from the dashboard: one delivered, one bounced; subject, name and metadata are hostile.
    const r = await request(`${s.url}/api/v1/emails`, {
      key: apiKey,
      body: {
        from: `"${XSS.replaceAll('"', "'")}" <shop@shop.test>`,
        to: ['bob@good.test', 'nobody@good.test'],
        subject: XSS,
        text_body: 'hi',
        html_body: XSS,
        metadata: { note: XSS },
      },
    });
    t.equal(r.status, 202, JSON.stringify(r.body));
    bouncedId = r.body.message_id;
    await s.daemon.scheduler.drain();
  });

  await t.test('webhooks: create, send a test event, see the delivery with the response, replay it', async (t) => {
    rx.script.set('/hook', [{ status: 200, type: 'text/html', body: XSS }]);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill(rx.url('/hook'));
    await page.getByLabel('Description').fill(XSS);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = (await page.locator('#new-secret').textContent())!;
    t.match(secret, /^whsec_/);
    rx.secrets.set('/hook', secret);
    await page.getByRole('link', { name: rx.url('/hook').replace('https://', ''), exact: true }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    t.ok(await page.getByText(/email\.delivered msg_\S+: HTTP 200/).isVisible(), "the receiver's answer is shown");
    t.equal(rx.on('/hook').at(-1)?.verified, true, 'the receiver verified the signature');
    // A message sent now: its events reach the endpoint through the dispatcher; then one is replayed.
    const r = await request(`${s.url}/api/v1/emails`, {
      key: apiKey,
      body: { from: 'shop@shop.test', to: 'carol@good.test', subject: 'Order', text_body: 'hi' },
    });
    t.equal(r.status, 202);
    await s.daemon.scheduler.drain();
    await s.daemon.dispatcher.drain();
    await page.reload();
    const before = rx.on('/hook').length;
    await page.getByRole('button', { name: 'Replay' }).first().click();
    t.equal(rx.on('/hook').length, before + 1, 'replayed');
    t.equal(rx.on('/hook').at(-1)?.verified, true);
    await shot(page, 'webhook');
    // The message's page names the endpoint its events went to by URL, not by id.
    await page.goto(`${base}/messages/${encodeURIComponent(r.body.message_id)}`);
    const hook = page
      .locator('li', { hasText: 'email.delivered' })
      .getByRole('link', { name: rx.url('/hook').replace('https://', ''), exact: true });
    t.equal(
      await hook.getAttribute('title'),
      rx.url('/hook'),
      'webhook deliveries are labelled by URL, whole in the title',
    );
    t.notMatch(await page.locator('main').textContent(), /wh_/, 'not by endpoint id');
    // A long URL is cut in the middle in the list, whole in the title, escaped.
    const long = `https://hooks.example.com/${'deep/'.repeat(20)}end?q=<b>x</b>`;
    await s.store.webhooks.createEndpoint({
      customerId: await customerId(s.store),
      url: long,
      events: null,
      description: '',
      secret: 'whsec_y',
      now: Date.now(),
    });
    await page.goto(`${base}/webhooks`);
    const link = page.locator(`a[title="${long}"]`);
    t.match(
      await link.textContent(),
      /^hooks\.example\.com\/deep\/[^…]*…[^…]*\/end\?q=<b>x<\/b>$/,
      'cut in the middle: host and end kept',
    );
  });

  await t.test('finds the bounced message and reads its timeline', async (t) => {
    await page.getByRole('link', { name: 'Messages' }).click();
    await page.getByLabel('State').selectOption('bounced');
    await page.getByRole('button', { name: 'Search' }).click();
    await shot(page, 'messages');
    await page.locator(`a[href="/messages/${encodeURIComponent(bouncedId)}"]`).click();
    t.ok(await page.getByText('email.bounced', { exact: true }).isVisible());
    t.ok(
      await page
        .getByText(/550 5\.1\.1 .*User unknown/)
        .first()
        .isVisible(),
      'the remote reply',
    );
    t.ok(await page.getByText('email.delivered', { exact: true }).isVisible());
    // Times read relative to the server's clock, each exact in its <time> element.
    const accepted = page.locator('dt:text-is("Accepted") + dd time');
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
    t.match(await accepted.innerText(), /^(just now|\d+ s ago)$/, 'accepted: how long ago');
    t.match(await accepted.getAttribute('title'), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/, 'the exact time in its title');
    t.ok(Math.abs(Date.parse((await accepted.getAttribute('datetime'))!) - Date.now()) < 60_000, 'and in its datetime');
    t.ok(
      await page.locator('li', { hasText: 'email.bounced' }).locator('time').first().isVisible(),
      'each event with its time',
    );
    // The last reply reads as a reply: its codes, what it was taken to mean, its words; not JSON.
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
    const last = await page.locator('p', { hasText: 'Last reply:' }).nth(1).innerText();
    t.match(
      last,
      /^Last reply: 550 5\.1\.1 unknown recipient .*Recipient address rejected: User unknown in virtual mailbox table$/,
      'the last reply, as it reads',
    );
    t.equal(
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
      await page.locator('p', { hasText: 'Last reply:' }).first().innerText(),
      'Last reply: 250 Ok: queued as TEST',
      'a delivery: its words, no classification',
    );
    t.notMatch(
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
      await page.locator('main').innerText(),
      /"enhanced_code"|"classification"|\{"code"/,
      'no reply shown as JSON',
    );
    t.ok(
      await page
        .getByText(/^to · 1 attempt$/)
        .first()
        .isVisible(),
      "a recipient's attempts, counted in words",
    );
    t.ok(
      await page.getByText(/mx\.good\.test · TLS, certificate not checked/).isVisible(),
      'how the delivery was protected: STARTTLS to a self-signed certificate',
    );
    await shot(page, 'message');
  });

  await t.test('cancels a scheduled message; a sent one has no cancel button', async (t) => {
    t.equal(
      await page.getByRole('button', { name: 'Cancel this message' }).count(),
      0,
      'the bounced message cannot be canceled',
    );
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const r = await request(`${s.url}/api/v1/emails`, {
      key: apiKey,
      body: {
        from: 'shop@shop.test',
        to: 'later@good.test',
        subject: 'Tomorrow',
        text_body: 'hi',
        scheduled_at: at,
        tags: ['reminder'],
      },
    });
    t.equal(r.body.status, 'scheduled');
    await page.goto(`${base}/messages/${encodeURIComponent(r.body.message_id)}`);
    t.ok(await page.getByText('Scheduled for', { exact: true }).isVisible());
    t.equal(
      await page.locator('dt:text-is("Scheduled for") + dd').textContent(),
      'in 1 h',
      'the time it waits for, ahead',
    );
    t.equal(
      await page.locator('dt:text-is("Scheduled for") + dd time').getAttribute('datetime'),
      at,
      'exactly, in the datetime',
    );
    t.ok(await page.getByRole('link', { name: 'reminder' }).isVisible(), 'its tag, a link to the search');
    await page.getByRole('button', { name: 'Cancel this message' }).click();
    t.ok(await page.getByText('Canceled: nothing will be sent.').isVisible());
    t.ok(await page.getByText('canceled', { exact: true }).first().isVisible(), "the recipient's state");
    t.equal(await page.getByRole('button', { name: 'Cancel this message' }).count(), 0);
    t.equal(await s.sql.value("SELECT state FROM recipients WHERE address = 'later@good.test'"), 'canceled');
  });

  await t.test('removes a suppression', async (t) => {
    await page.getByRole('link', { name: 'Suppressions' }).click();
    t.ok(
      await page.getByRole('cell', { name: 'nobody@good.test', exact: true }).isVisible(),
      'the hard bounce suppressed it',
    );
    await shot(page, 'suppressions');
    await page.getByRole('button', { name: 'Remove nobody@good.test' }).click();
    t.ok(await page.getByText('The address is no longer suppressed.').isVisible());
    t.equal(await page.getByRole('cell', { name: 'nobody@good.test', exact: true }).count(), 0);
  });

  await t.test("a link cannot put words in the dashboard's banners: codes only, each a fixed sentence", async (t) => {
    const lure = 'Your account is suspended: call +1 555 0100';
    const q = encodeURIComponent(lure);
    await page.goto(`${base}/?error=${q}&notice=${q}&flash=${q}`);
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
    t.notMatch(await page.locator('main').innerText(), /suspended/, 'nothing of the URL is said');
    t.equal(
      await page.getByRole('alert').textContent(),
      'Something went wrong with the last request.',
      'an unknown error code: a generic sentence',
    );
    t.equal(await page.getByRole('status').textContent(), 'Done.', 'an unknown notice code: a generic sentence');
    await page.goto(`${base}/messages?error=too-late`);
    t.equal(
      await page.getByRole('alert').textContent(),
      'Too late to cancel: delivery has ended.',
      'a known code: its sentence',
    );
    const other = await browser.newContext();
    const login = await other.newPage();
    await login.goto(`${base}/login?error=${q}`);
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
    t.notMatch(await login.locator('body').innerText(), /suspended/, 'nor on the login page');
    await other.close();
  });

  await t.test('reads an inbound message: its HTML in a sandboxed frame, nothing runs', async (t) => {
    const c = await RawSmtp.connect(s.daemon.smtp.port);
    await c.cmd('EHLO client.sender.test');
    await c.send(
      'bob@sender.test',
      ['support@in.example.com'],
      `From: "${XSS.replaceAll('"', "'")}" <bob@sender.test>\r\nTo: support@in.example.com\r\nSubject: ${XSS}\r\nMIME-Version: 1.0\r\nContent-Type: text/html\r\n\r\n<p id="shown">Hello</p><img src="${T}/track.png"><iframe src="${T}/frame"></iframe>${XSS}\r\n`,
    );
    c.close();
    await page.getByRole('link', { name: 'Inbound' }).click();
    await page.locator('a[href^="/inbound/in_"]').first().click();
    t.equal(await page.locator('iframe.mail').getAttribute('sandbox'), '', 'the frame is sandboxed: no scripts');
    t.equal(
      await page.frameLocator('iframe.mail').locator('#shown').textContent(),
      'Hello',
      'the frame shows the HTML',
    );
    await quiet(1000);
    t.equal(env.tracker.connections(), 0, 'and nothing it names was fetched or connected to');
    t.ok(await page.getByRole('link', { name: 'Download the raw message' }).isVisible());
    const raw = await page.request.get(
      `${base}${await page.getByRole('link', { name: 'Download the raw message' }).getAttribute('href')}`,
    );
    t.match(
      raw.headers()['content-disposition'],
      /^attachment; filename="in_\w+\.eml"/,
      'the raw message is a download',
    );
    await shot(page, 'inbound');
  });

  await t.test('the overview counts what happened', async (t) => {
    await page.getByRole('link', { name: 'Overview' }).click();
    t.ok(await page.locator('svg.chart').isVisible());
    // Four recipients accepted (the scheduled one, canceled, among them): two delivered, one bounced.
    t.match(
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
      await page.locator('.stats').first().innerText(),
      /^4\s*recipients accepted\s*2\s*recipients delivered\s*0\s*deferred attempts\s*1\s*recipient bounced\s*0\s*complaints$/,
    );
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
    const queueNow = await page.locator('.stats').nth(2).innerText();
    t.match(
      queueNow,
      /^0\s*recipients queued\s*0\s*recipients waiting to retry\s*—\s*when the oldest waiting to retry was accepted\s*\d+\s*webhook deliver(y|ies) waiting$/,
      'the queue now, per recipient',
    );
    await shot(page, 'overview');
    t.equal(
      await page.getByRole('heading', { name: 'Destinations slowed down' }).count(),
      0,
      'no throttled destinations: no such section',
    );
    // A receiver that refused with a 421 (its reply is someone else's words) is listed while the server slows down for it.
    const throttle = (change: Parameters<typeof s.store.delivery.setThrottle>[0]) =>
      s.store.delivery.setThrottle(change, Date.now(), '');
    await throttle({
      kind: 'set',
      record: {
        destination: 'busy.example',
        connections: 2,
        strikes: 1,
        pausedUntil: Date.now() + 600_000,
        reason: { code: 421, enhanced_code: '4.7.28', message: `slow down ${XSS}`, classification: 'rate_limited' },
        since: Date.now(),
      },
    });
    await page.reload();
    t.ok(await page.getByRole('heading', { name: 'Destinations slowed down' }).isVisible());
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
    const row = await page.locator('tr', { hasText: 'busy.example' }).innerText();
    t.match(
      row,
      /busy\.example\s+in 10 min\s+2\s[\s\S]*421 4\.7\.28 rate limited slow down <script>/,
      'paused until, connections, and the reply as text',
    );
    // The nodes on the store, for an administrator: this daemon and another one whose name is someone's input.
    await s.store.nodes.register({ id: 'other-node', name: `other ${XSS}`, pid: 4242, leaseMs: 600_000 }, false);
    await page.reload();
    t.ok(await page.getByRole('heading', { name: 'Nodes' }).isVisible());
    t.match(
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
      await page.locator('tr', { hasText: 'other-node' }).innerText(),
      /other <script>[\s\S]*(just now|in a moment|s ago)[\s\S]*\s0\s+0\s/,
      'name as text, started, heartbeat, claims',
    );
    t.equal(await page.locator('tr', { hasText: s.daemon.node.id }).count(), 1, 'this daemon is listed');
    // 375 px wide: nothing overflows sideways.
    await page.setViewportSize({ width: 375, height: 800 });
    for (const p of [
      '/',
      '/messages',
      `/messages/${encodeURIComponent(bouncedId)}`,
      '/keys',
      '/domains/shop.test',
      '/webhooks',
      '/suppressions',
      '/inbound',
    ]) {
      await page.goto(base + p);
      t.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 376, `${p} fits 375 px`);
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
      t.notMatch(await page.locator('main').innerText(), /\(s\)/, `${p}: counts agree with their nouns, no "(s)"`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await throttle({ kind: 'cleared', destination: 'busy.example' });
    await s.store.nodes.leave('other-node');
  });

  await t.test('keyboard alone: tab to the search, type, submit with Enter', async (t) => {
    await page.goto(`${base}/messages`);
    for (
      let i = 0;
      i < 30 && (await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name)) !== 'recipient';
      i++
    )
      await page.keyboard.press('Tab');
    await page.keyboard.type('bob@good.test');
    await page.keyboard.press('Enter');
    await page.waitForURL(/recipient=bob%40good\.test/);
    t.equal(await page.locator('tbody tr a[href^="/messages/"]').count(), 1);
  });

  await t.test('the search finds a message by the Message-ID its sender wrote; its page shows that id', async (t) => {
    const own = `app"&'${Date.now()}@shop.test`;
    const r = await request(`${s.url}/api/v1/emails`, {
      key: apiKey,
      body: {
        from: 'shop@shop.test',
        to: 'dora@good.test',
        subject: 'Own id',
        text_body: 'hi',
        headers: { 'Message-ID': `<${own}>` },
      },
    });
    t.equal(r.status, 202);
    await page.goto(`${base}/messages?${new URLSearchParams({ message_id: `<${own}>` })}`);
    t.equal(await page.locator(`tbody tr a[href="/messages/${encodeURIComponent(r.body.message_id)}"]`).count(), 1);
    await page.goto(`${base}/messages/${encodeURIComponent(r.body.message_id)}`);
    t.ok(await page.getByText(own, { exact: true }).isVisible(), "the sender's Message-ID, as text");
  });

  await t.test('nothing anyone else wrote ran: no dialog, no script', async (t) => {
    t.same(ran, []);
  });

  await t.test("a customer's user sees only that customer; another customer's objects are 404", async (t) => {
    const c2 = await browser.newContext();
    const p2 = await c2.newPage();
    watch(p2);
    await login(p2, 'user@acme.test');
    t.equal(await p2.getByRole('link', { name: 'Customers' }).count(), 0, 'no customers page');
    t.equal(await p2.getByRole('heading', { name: 'Nodes' }).count(), 0, 'the nodes are for administrators');
    const hook = await s.store.webhooks.createEndpoint({
      customerId: await customerId(s.store),
      url: rx.url('/x'),
      events: null,
      description: '',
      secret: 'whsec_x',
      now: Date.now(),
    });
    const inboundId = (await s.sql.value('SELECT id FROM inbound_messages LIMIT 1')) as string;
    const keyId = (await s.sql.value("SELECT id FROM api_keys WHERE name = 'web app'")) as string;
    for (const p of [
      `/keys/${keyId}/revoke`,
      '/domains/shop.test',
      `/webhooks/${hook.id}`,
      `/messages/${encodeURIComponent(bouncedId)}`,
      `/inbound/${inboundId}`,
      `/inbound/${inboundId}/raw`,
      '/customers',
    ]) {
      const r = await p2.goto(base + p);
      t.equal(r?.status(), 404, `${p}: 404`);
    }
    await c2.close();
  });

  await t.test('a cross-site POST and a POST without the CSRF token are refused, and change nothing', async (t) => {
    const cookies = await ctx.cookies();
    const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const keys = async () => (await s.sql.value('SELECT COUNT(*) FROM api_keys')) as number;
    const n = await keys();
    const form = {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.test' },
      body: 'name=x&kind=production&scopes=full',
    };
    t.equal((await fetch(`${base}/keys`, form)).status, 403, 'cross-site');
    const { origin: _o, ...sameSite } = form.headers;
    t.equal((await fetch(`${base}/keys`, { ...form, headers: sameSite })).status, 403, 'no token');
    t.equal(await keys(), n);
  });

  await t.test('logs out; failed logins are throttled per account', async (t) => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login/);
    await page.goto(`${base}/keys`);
    t.match(page.url(), /\/login/, 'the session is gone');
    let last = 0;
    for (let i = 0; i < 6; i++) {
      const r = await fetch(`${base}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email=admin%40ops.test&password=wrong',
        redirect: 'manual',
      });
      last = r.status;
      if (i < 5) t.equal(r.status, 401);
      else {
        t.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After');
        t.match(await r.text(), 'try again in 15 minutes.', 'the wait, in words');
      }
    }
    t.equal(last, 429);
  });
}

await withPeer(browserAvailable(), run);
