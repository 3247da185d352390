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
          environment: 'node',
          // chDB binds one data directory per process: every integration file runs in its own process.
          pool: 'forks',
          isolate: true,
          globalSetup: ['test/harness/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
