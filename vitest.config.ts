import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests that start child processes or browsers are slow on a 2-core machine; keep parallelism modest.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
