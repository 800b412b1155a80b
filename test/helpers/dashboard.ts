/// <reference lib="dom" />
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { hashPassword } from '../../src/lib/password.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';
import { launchBrowser } from './browser.js';
import { customerId, startTestServer, type TestServer } from './env.js';
import { fixturePath } from './fixtures.js';
import { WebhookReceiver } from './webhook-receiver.js';

// What the dashboard's browser tests share: a daemon with its dashboard, a loopback DNS server,
// MX and webhook receiver, an admin and a customer's user, Debian's Chromium, and a tracker that
// counts every connection made to it.

/**
 * Where the browser tests put their screenshots: a temporary directory each, so a test run leaves
 * the tree as it was; `npm run screenshots` sets POSTHASTE_SCREENSHOTS=docs and they replace the
 * README's.
 */
const DOC_SHOTS = fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url));
const docShots = () => process.env.POSTHASTE_SCREENSHOTS === 'docs';

export const XSS = `<script>console.log('XSS-RAN')</script><img src=x onerror="console.log('XSS-RAN')"><a href="javascript:console.log('XSS-RAN')">x</a><style>body{display:none}</style>`;
export const PASSWORD = 'a long enough password';

export interface DashboardEnv {
  s: TestServer;
  /** The dashboard's address. */
  base: string;
  dns: TestDnsServer;
  mx: TestMx;
  rx: WebhookReceiver;
  browser: Browser;
  /** What ran that should not have: dialogs, and console lines saying XSS-RAN, on watched pages. */
  ran: string[];
  watch(page: Page): void;
  /** Logs in from the login page; `check` is told the login page was shown first. */
  login(page: Page, email: string, check: (onLoginPage: boolean) => void): Promise<void>;
  shot(page: Page, name: string): Promise<Buffer>;
  /** The visible form controls without an accessible name. */
  unlabelled(page: Page): Promise<string[]>;
  /** A host that mail shown in the dashboard names everywhere it could load something. */
  tracker: { url: string; connections: () => number; reset: () => void };
  close(): Promise<void>;
}

/**
 * The environment, started: mail to good.test goes to the loopback MX, which refuses nobody@
 * (550 5.1.1) and defers slow@ (451); admin@ops.test is an admin, user@acme.test the user of
 * customer acme. `extraToml`: more sections for the daemon.
 */
export async function startDashboardEnv(extraToml = ''): Promise<DashboardEnv> {
  const dns = await new TestDnsServer().start();
  const mx = await new TestMx('127.0.0.1').start();
  const rx = await new WebhookReceiver().start();
  dns.set('good.test', { MX: [{ preference: 10, exchange: 'mx.good.test' }] });
  dns.set('mx.good.test', { A: ['127.0.0.1'] });
  mx.script = (rcpt) =>
    rcpt.startsWith('nobody')
      ? { rcpt: [550, '5.1.1 <' + rcpt + '>: Recipient address rejected: User unknown in virtual mailbox table'] }
      : rcpt.startsWith('slow')
        ? { rcpt: [451, '4.7.1 try again later'] }
        : undefined;
  const s = await startTestServer(
    `[outbound]\nport = ${mx.port}\n[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n[inbound]\nrate_per_minute = 1000\n${extraToml}`,
    {
      manualDelivery: true,
      dns: dns.server,
      dashboard: '',
    },
  );
  const base = s.daemon.dashboardUrl!;
  await s.store.users.add({
    email: 'admin@ops.test',
    passwordHash: await hashPassword(PASSWORD),
    role: 'admin',
    customerId: null,
    now: Date.now(),
  });
  await s.store.users.add({
    email: 'user@acme.test',
    passwordHash: await hashPassword(PASSWORD),
    role: 'customer',
    customerId: await customerId(s.store, 'acme'),
    now: Date.now(),
  });
  let connections = 0;
  const trackerServer = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((r) => trackerServer.listen(0, '127.0.0.1', r));
  const browser = await launchBrowser();
  const shots = docShots() ? DOC_SHOTS : join(mkdtempSync(join(tmpdir(), 'posthaste-screenshots-')), sep);
  mkdirSync(shots, { recursive: true });
  const ran: string[] = [];
  return {
    s,
    base,
    dns,
    mx,
    rx,
    browser,
    ran,
    watch: (page) => {
      page.on('dialog', (d) => {
        ran.push(`dialog: ${d.message()}`);
        void d.dismiss();
      });
      page.on('console', (m) => {
        if (m.text().includes('XSS-RAN')) ran.push(`console: ${m.text()}`);
      });
    },
    login: async (page, email, check) => {
      await page.goto(`${base}/`);
      check(/\/login/.test(page.url()));
      await page.getByLabel('E-mail address').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL(`${base}/`);
    },
    shot: (page, name) => page.screenshot({ path: `${shots}${name}.png`, fullPage: true }),
    unlabelled: (page) =>
      page.evaluate(() =>
        Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button'))
          .filter(
            (el) =>
              !(el as HTMLInputElement).labels?.length &&
              !el.getAttribute('aria-label') &&
              !(el.textContent ?? '').trim(),
          )
          .map((el) => el.outerHTML.slice(0, 80)),
      ),
    tracker: {
      url: `http://127.0.0.1:${(trackerServer.address() as { port: number }).port}`,
      connections: () => connections,
      reset: () => {
        connections = 0;
      },
    },
    close: async () => {
      await new Promise<void>((r) => trackerServer.close(() => r()));
      await browser.close();
      await s.close();
      await Promise.all([dns.stop(), mx.stop(), rx.stop()]);
      if (!docShots()) rmSync(shots, { recursive: true, force: true });
    },
  };
}
