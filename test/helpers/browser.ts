import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why Debian's Chromium cannot be driven here, or null. */
export function browserAvailable(): string | null {
  return existsSync(CHROMIUM) ? null : 'Chromium is not installed (apt-get install chromium; .ci/run does)';
}

/**
 * Debian's Chromium, headless, fetching nothing on its own. playwright-core's launch gives it a
 * fresh temporary profile each time (and removes it at close); each new context is a clean one.
 */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
