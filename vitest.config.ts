import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Marks the processes tests spawn and fails the run if one outlives the suite.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // e2e tests start real servers on ephemeral ports; keep the 2-core CI machine from oversubscribing.
    maxWorkers: 2,
  },
});
