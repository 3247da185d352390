import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{ingest,projections,api,mcp,test}/**/*.unit.test.ts', '*.unit.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.integration.test.ts'],
          exclude: ['test/**/*.e2e.integration.test.ts'],
          environment: 'node',
          // chDB binds one data directory per process: every integration file runs in its own process.
          pool: 'forks',
          isolate: true,
          globalSetup: ['test/harness/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
      {
        // Whole-program tests with a time limit of their own (npm start within two minutes): they run
        // after the other groups, alone, so that parallel test files do not eat their clock.
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e.integration.test.ts'],
          environment: 'node',
          pool: 'forks',
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          testTimeout: 300_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
