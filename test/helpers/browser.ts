import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { buildDashboardIfStale } from '../../scripts/dashboard-build.js';

/** Debian's Chromium, which `.ci/run` installs; the browser tests drive it with playwright-core. */
export const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';

/** Screenshots of each page, kept as test artifacts (gitignored). */
export const ARTIFACTS = fileURLToPath(new URL('../browser/artifacts/', import.meta.url));

/** Launches headless Chromium, or fails with what to install: a missing browser must not pass as a skip. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`The browser tests need Chromium at ${CHROMIUM}: run \`apt-get update && apt-get install -y chromium\` (.ci/run does), or set TOLLGATE_CHROMIUM to another Chromium binary.`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/** Everything the page reported as an error: console errors, uncaught exceptions and failed requests. */
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`uncaught: ${error.message}`));
  page.on('requestfailed', (request) => {
    // Polls cut short by leaving a page are aborted on purpose.
    if (request.failure()?.errorText !== 'net::ERR_ABORTED') errors.push(`request failed: ${request.url()} ${request.failure()?.errorText}`);
  });
  return errors;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/**
 * What every dashboard test starts with: the dashboard built (when its sources changed), Chromium launched, one
 * desktop-sized page, and that page's errors collected.
 */
export async function openBrowserPage(): Promise<{ browser: Browser; context: BrowserContext; page: Page; errors: string[] }> {
  buildDashboardIfStale({ quiet: true });
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  return { browser, context, page, errors: collectPageErrors(page) };
}
