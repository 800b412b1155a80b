import nodemailer from 'nodemailer';
import type { Page } from 'playwright-core';
import t from 'tap';
import { quiet } from '../../support/wait.js';
import { browserAvailable } from '../helpers/browser.js';
import { startDashboardEnv, XSS } from '../helpers/dashboard.js';
import { makeDomain, makeKey } from '../helpers/env.js';
import { request } from '../helpers/http.js';
import { withPeer } from '../helpers/peers.js';
import { submissionToml } from '../helpers/submission.js';

// A message's content on its page (text, HTML that fetches nothing, attachments, source) and
// what a sandbox key's simulated suppressions look like, in Debian's Chromium against the real
// daemon (the rest of the dashboard: dashboard.test.ts).

async function run(): Promise<void> {
  const env = await startDashboardEnv(submissionToml('allow_plaintext_auth_on_loopback = true\n'));
  t.teardown(() => env.close());
  const { s, base, browser, ran, watch, shot } = env;
  const T = env.tracker.url;
  await makeDomain(s.store, 'shop.test');
  const apiKey = await makeKey(s.store);
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  watch(page);
  let invoiceId = '';

  await t.test(
    "a message's content: its text, its HTML in a frame that fetches nothing, its attachments, its source",
    async (t) => {
      await env.login(page, 'admin@ops.test', (shown) => t.ok(shown, 'signed out: sent to the login page'));
      await fetch(`${T}/control`).catch(() => undefined);
      t.equal(env.tracker.connections(), 1, 'the tracker counts a connection (control)');
      env.tracker.reset();
      const lures = `<img src="${T}/open.gif"><div style="background:url(${T}/bg)">b</div><link rel=stylesheet href="${T}/sheet.css"><style>@import url(${T}/import.css);@font-face{font-family:f;src:url(${T}/font)}p{font-family:f}</style><iframe src="${T}/frame"></iframe><object data="${T}/object"></object><embed src="${T}/embed"><video poster="${T}/poster"></video><meta http-equiv="refresh" content="0;url=${T}/refresh"><link rel=preconnect href="${T}"><img srcset="${T}/srcset 1x">`;
      const attachment = Buffer.from('<script>console.log("XSS-RAN")</script>');
      const r = await request(`${s.url}/api/v1/emails`, {
        key: apiKey,
        body: {
          from: 'shop@shop.test',
          to: 'slow@good.test',
          subject: 'Invoice',
          text_body: 'Hello,\nyour invoice is attached.',
          html_body: `<h1 id="shown" style="font-family:sans-serif">Your invoice</h1><p style="font-family:sans-serif;color:#555">Order 1042 · 3 items · 42.00 EUR</p>${lures}<script>console.log('XSS-RAN')</script><img src=x onerror="console.log('XSS-RAN')">`,
          attachments: [
            {
              filename: `${XSS.replaceAll('"', "'")}.html`,
              io: attachment.toString('base64'),
              content_type: 'text/html',
            },
            {
              filename: 'Übersicht 2026.pdf',
              io: Buffer.from('%PDF-1.4 not really').toString('base64'),
              content_type: 'application/pdf',
            },
          ],
        },
      });
      t.equal(r.status, 202, JSON.stringify(r.body));
      invoiceId = r.body.message_id;
      await s.daemon.scheduler.drain();
      await page.goto(`${base}/messages/${encodeURIComponent(invoiceId)}`);
      t.equal(await page.locator('pre.mail-text').textContent(), 'Hello,\nyour invoice is attached.', 'the text body');
      t.equal(await page.locator('iframe.mail').getAttribute('sandbox'), '', 'the HTML in a sandboxed frame');
      t.ok(
        await page.frameLocator('iframe.mail').getByRole('heading', { name: 'Your invoice' }).isVisible(),
        'which shows it',
      );
      await quiet(1000);
      t.equal(env.tracker.connections(), 0, 'and nothing it names was fetched or even connected to');
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
      const listed = await page.locator('ul.attachments').innerText();
      t.match(
        listed,
        `${XSS.replaceAll('"', "'")}.html · text/html · ${attachment.length} bytes`,
        'each attachment: name, type, size',
      );
      t.match(listed, 'Übersicht 2026.pdf · application/pdf · 19 bytes');
      const first = await page.request.get(
        `${base}${await page.locator('ul.attachments a').first().getAttribute('href')}`,
      );
      t.equal(
        first.headers()['content-type'],
        'application/octet-stream',
        'downloaded as bytes, whatever type it claims',
      );
      t.match(
        first.headers()['content-disposition'],
        /^attachment; filename="[A-Za-z0-9._@+-]+"; filename\*=UTF-8''/,
        'as an attachment, never shown inline',
      );
      t.equal(first.headers()['x-content-type-options'], 'nosniff');
      t.same(Buffer.from(await first.body()), attachment, 'its bytes');
      // A recipient is deferred: the composed message is kept, and is the source shown.
      t.match(
        await page.locator('h2:text-is("Source") + .card').textContent(),
        'The MIME message as composed for delivery',
      );
      const source = (await page.locator('pre.source').textContent())!;
      t.match(source, `Message-ID: <${invoiceId}>`, 'the composed message');
      t.match(source, 'MIME-Version: 1.0');
      const eml = await page.request.get(`${base}/messages/${encodeURIComponent(invoiceId)}/source`);
      t.match(eml.headers()['content-disposition'], /^attachment; /);
      t.match(await eml.text(), `Message-ID: <${invoiceId}>`);
      await shot(page, 'message-content');
      // A bounced message: every recipient is done, so the composed copy is gone; the request is shown.
      const bounced = await request(`${s.url}/api/v1/emails`, {
        key: apiKey,
        body: { from: 'shop@shop.test', to: 'nobody@good.test', subject: 'Refused', text_body: 'hi' },
      });
      t.equal(bounced.status, 202);
      await s.daemon.scheduler.drain();
      await page.goto(`${base}/messages/${encodeURIComponent(bounced.body.message_id)}`);
      t.match(
        await page.locator('h2:text-is("Source") + .card').textContent(),
        /kept only while a recipient may still be retried, and none may now: this is the send request as accepted/,
      );
      t.match(await page.locator('pre.source').textContent(), '"subject"', 'the request as accepted');
      // Retention removes the body of a finished message: the page says so.
      await s.store.admin.purgeOld(Date.now() + 31 * 86_400_000, 30);
      await page.reload();
      t.ok(
        await page.getByText(/The body of this message was removed by retention/).isVisible(),
        'a purged body says where it went',
      );
      t.equal(await page.locator('pre.source').count(), 0);
      t.equal(env.tracker.connections(), 0, 'nothing was fetched from the tracker at all');
    },
  );

  await t.test(
    'a message submitted over SMTP: its text, HTML and attachment read from the message as stored, and that message as its source',
    async (t) => {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: s.daemon.submission['submission.listen']!.port,
        secure: false,
        ignoreTLS: true,
        auth: { user: 'posthaste', pass: apiKey },
      });
      const info = await transport.sendMail({
        from: 'Shop <shop@shop.test>',
        to: 'someone@good.test',
        subject: 'Submitted receipt',
        text: 'Your receipt, submitted over SMTP.',
        html: '<h1>Receipt</h1><p>Submitted over SMTP.</p>',
        attachments: [{ filename: 'receipt.txt', content: 'total 42.00 EUR\n' }],
      });
      transport.close();
      const id = /queued as (\S+)/.exec(info.response)![1]!;
      await page.goto(`${base}/messages/${encodeURIComponent(id)}`);
      t.equal(await page.locator('pre.mail-text').textContent(), 'Your receipt, submitted over SMTP.', 'the text part');
      t.ok(
        await page.frameLocator('iframe.mail').getByRole('heading', { name: 'Receipt' }).isVisible(),
        'the HTML part in its frame',
      );
      t.match(
        // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText (the text as shown), not the DOM property
        await page.locator('ul.attachments').innerText(),
        'receipt.txt · text/plain · 16 bytes',
        'the attachment',
      );
      t.match(
        await page.locator('pre.source').textContent(),
        /^Received: from \S+ \(\[127\.0\.0\.1\]\)\n\tby mx\.test\.posthaste \(posthaste\) with ESMTPA id [\s\S]*Subject: Submitted receipt/,
        "the message as stored, posthaste's Received line first",
      );
      t.ok(
        await page.getByText('The message as it was submitted over SMTP').isVisible(),
        'the page says which source it shows',
      );
    },
  );

  await t.test(
    "a sandbox key's simulated bounce: explained on the message and the Suppressions page, the list untouched",
    async (t) => {
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByLabel('Name').fill('tests');
      await page.getByLabel(/Sandbox/).check();
      await page.getByLabel(/Full/).check();
      await page.getByRole('button', { name: 'Create key' }).click();
      const sandboxKey = (await page.locator('#new-key').textContent())!;
      t.match(sandboxKey, /^ph_test_/);
      const r = await request(`${s.url}/api/v1/emails`, {
        key: sandboxKey,
        body: { from: 'shop@shop.test', to: 'bounced@simulator.posthaste.test', subject: 'Simulated', text_body: 'hi' },
      });
      t.equal(r.status, 202);
      await s.daemon.scheduler.drain();
      await page.goto(`${base}/messages/${encodeURIComponent(r.body.message_id)}`);
      const event = page.locator('li', { hasText: 'recipient.suppressed' });
      t.match(
        await event.textContent(),
        'Simulated by a sandbox key: the address was not added to the suppression list',
        'the event says it was simulated',
      );
      await page.getByRole('link', { name: 'Suppressions' }).click();
      t.equal(
        await page.getByRole('cell', { name: 'bounced@simulator.posthaste.test', exact: true }).count(),
        1,
        'listed once: under what the sandbox simulated',
      );
      const simulated = page.locator('h2:text-is("Simulated by sandbox keys") + .card');
      t.match(
        await simulated.textContent(),
        'never adds the address to the list above',
        'why the list does not have it',
      );
      t.ok(await simulated.getByRole('link', { name: r.body.message_id }).isVisible(), 'with its message');
      t.equal(
        await s.sql.value("SELECT COUNT(*) FROM suppressions WHERE address = 'bounced@simulator.posthaste.test'"),
        0,
        'the real list is untouched',
      );
      await shot(page, 'suppressions-sandbox');
    },
  );

  await t.test("another customer's user reaches none of it", async (t) => {
    const other = await browser.newContext();
    const p2: Page = await other.newPage();
    await env.login(p2, 'user@acme.test', () => undefined);
    for (const p of ['html', 'attachments/0', 'source']) {
      const r = await p2.goto(`${base}/messages/${encodeURIComponent(invoiceId)}/${p}`);
      t.equal(r?.status(), 404, `${p}: 404`);
    }
    await other.close();
  });

  await t.test('nothing anyone else wrote ran: no dialog, no script', async (t) => {
    t.same(ran, []);
  });
}

await withPeer(browserAvailable(), run);
