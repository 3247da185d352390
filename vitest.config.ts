import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

const KAFKA_GROUP_FILES = ['test/ingest-kafka.integration.test.ts', 'test/ingest-crash.integration.test.ts'];

export default defineConfig({
  test: {
    // Vitest's default keeps one core free: on a machine of two cores it runs the unit and integration
    // files one after another. At least two at a time (each in its own process) overlap one file's waits
    // (child processes, group joins, timers) with another's work. The e2e group stays one file at a time
    // (fileParallelism: false).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{ingest,projections,operations,api,mcp,metrics,roles,test}/**/*.unit.test.ts', '*.unit.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.integration.test.ts'],
          exclude: ['test/**/*.e2e.integration.test.ts', ...KAFKA_GROUP_FILES],
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
        // Consumer-group tests (two workers sharing partitions, a worker killed mid-stream): their group
        // timers are seconds, and a CPU shared with browser and model tests delays heartbeats into
        // rebalance storms. They run after the other files, in a group of their own: the two files beside
        // each other (mostly waiting on the brokers' group timers), and nothing else.
        test: {
          name: 'kafka',
          include: KAFKA_GROUP_FILES,
          environment: 'node',
          pool: 'forks',
          globalSetup: ['test/harness/global-setup.ts'],
          sequence: { groupOrder: 1 },
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
          sequence: { groupOrder: 2 },
          testTimeout: 300_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
