import { defineConfig } from 'vitest/config';

/**
 * Tests that measure the event loop's responsiveness (a /health poll answered within 50 ms while a hostile body
 * is tokenized) run after the rest, alone: on the 2-core CI machine a CPU-heavy neighbour (the consumer project's
 * `tsc` run) would otherwise decide their outcome instead of the gateway.
 */
const TIMING_SENSITIVE = ['test/e2e/tokenizer-stall.test.ts', 'test/unit/cache-use-lite.test.ts'];

export default defineConfig({
  test: {
    // Marks the processes tests spawn and fails the run if one outlives the suite.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // e2e tests start real servers on ephemeral ports; keep the 2-core CI machine from oversubscribing.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: TIMING_SENSITIVE } },
      { extends: true, test: { name: 'timing', include: TIMING_SENSITIVE, sequence: { groupOrder: 1 } } },
    ],
  },
});
