import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * Tests that measure the event loop's responsiveness (a /health poll answered within 50 ms while a hostile body
 * is tokenized) run after the rest, alone: on the 2-core CI machine a CPU-heavy neighbour (the consumer project's
 * `tsc` run) would otherwise decide their outcome instead of the gateway.
 */
const TIMING_SENSITIVE = ['test/e2e/tokenizer-stall.test.ts', 'test/unit/cache-use-lite.test.ts'];

/**
 * The browser tests drive Debian's Chromium. CI installs it (.ci/run) and always runs them: there a missing
 * browser fails loudly. On a developer's machine without it, `npm test` runs everything else and says which
 * tests it left out and how to run them, so the README's `npm test` holds on a fresh machine.
 */
const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';
const RUN_BROWSER_TESTS = existsSync(CHROMIUM) || process.env.CI === 'true';
const BROWSER_TESTS = ['test/browser/**/*.test.ts'];
// The config is read once per project: say it once.
if (!RUN_BROWSER_TESTS && process.env.TOLLGATE_BROWSER_TESTS_NOTED !== '1') {
  process.env.TOLLGATE_BROWSER_TESTS_NOTED = '1';
  console.warn(`\nThe browser tests (test/browser) are left out: no Chromium at ${CHROMIUM}. Install it (apt-get install -y chromium) or set TOLLGATE_CHROMIUM to run them.\n`);
}

export default defineConfig({
  test: {
    // Marks the processes tests spawn and fails the run if one outlives the suite.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // e2e tests start real servers on ephemeral ports; keep the 2-core CI machine from oversubscribing.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: [...TIMING_SENSITIVE, ...(RUN_BROWSER_TESTS ? [] : BROWSER_TESTS)] } },
      { extends: true, test: { name: 'timing', include: TIMING_SENSITIVE, sequence: { groupOrder: 1 } } },
    ],
  },
});
