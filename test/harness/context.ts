/**
 * Per-test isolation on shared services: each test context has its own ClickHouse database (inside the
 * one embedded store of its process), its own topic prefix and consumer group on the shared Kafka
 * cluster, and cleans up after itself.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { parseConfig, type Config, type ConfigOverrides } from '../../config.ts';
import { createLogger, type Logger } from '../../log.ts';
import { KafkaLog } from '../../ingest/bus/kafka.ts';
import { TopicNames } from '../../ingest/contract/topics.ts';
import { openMigratedStore } from '../../roles/runtime.ts';
import type { Store } from '../../projections/store.ts';

/** One embedded-store directory per test process (chDB binds one per process). */
export const PROCESS_DATA_DIR = path.join(os.tmpdir(), 'trader-analytics-tests', String(process.pid));

export function uniqueId(label: string): string {
  return `${label.replace(/[^A-Za-z0-9]/g, '_').slice(0, 20)}_${randomBytes(4).toString('hex')}`;
}

export interface TestContext {
  id: string;
  config: Config;
  log: Logger;
  topics: TopicNames;
  store: Store;
  cleanup(): Promise<void>;
}

export interface TestContextOptions {
  /** Extra environment for the config (its variables: a topic prefix, a port). */
  environment?: Record<string, string>;
  /** Settings on the parsed config, over TEST_OVERRIDES (internals that are constants in production: smaller fetch sizes). */
  overrides?: ConfigOverrides;
  /** Use this data directory instead of the process one (child-process tests). */
  dataDir?: string;
  /** Do not open the store (a child process owns it for now). */
  withoutStore?: boolean;
}

export function testEnvironment(
  id: string,
  dataDir: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
    DATA_DIR: dataDir,
    CLICKHOUSE_DATABASE: `t_${id}`,
    KAFKA_BROKERS: inject('kafkaBrokers').join(','),
    KAFKA_TOPIC_PREFIX: `t-${id}.`,
    KAFKA_GROUP_ID: `g-${id}`,
    // Tests publish a few events and wait for them: they would wait out the production linger (batching
    // for the store's sake) on every step.
    INGEST_LINGER_MS: '200',
    // Suites fire many calls in one tick (burst + k at once…) to test the gates: load shedding (its own
    // suite sets small limits) must not refuse them first.
    API_MAX_IN_FLIGHT: '10000',
    ...extra,
  };
}

/** What every test config changes on the parsed object: internals that are constants in production. */
export const TEST_OVERRIDES: ConfigOverrides = {
  // The rollup refresh interval, like the linger, is batching for the store's sake: tests would wait it out.
  ingest: { rollupIntervalMs: 500, retryBaseMs: 50 },
  // Short group timers: membership changes (a second worker, a killed worker) settle in seconds.
  kafka: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 },
};

/** TEST_OVERRIDES with a test's own overrides merged in (deeply; the test's win). */
export function testOverrides(overrides: ConfigOverrides = {}): ConfigOverrides {
  return mergedOverrides(TEST_OVERRIDES, overrides) as ConfigOverrides;
}

function mergedOverrides(base: unknown, extra: unknown): unknown {
  const isRecord = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isRecord(base) || !isRecord(extra)) return extra === undefined ? base : extra;
  const result: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(extra)) result[key] = mergedOverrides(base[key], value);
  return result;
}

/** A test's config: its environment, parsed, with TEST_OVERRIDES and its own overrides on top. */
export function testConfig(environment: Record<string, string | undefined>, overrides: ConfigOverrides = {}): Config {
  return parseConfig(environment, testOverrides(overrides));
}

export async function createTestContext(label: string, options: TestContextOptions = {}): Promise<TestContext> {
  const id = uniqueId(label);
  const config = testConfig(
    testEnvironment(id, options.dataDir ?? PROCESS_DATA_DIR, options.environment),
    options.overrides,
  );
  const log = createLogger(config.logLevel);
  const store = options.withoutStore ? undefined : await openMigratedStore(config, log);
  return {
    id,
    config,
    log,
    topics: new TopicNames(config.kafka.topicPrefix),
    get store(): Store {
      if (!store) throw new Error('this test context was created without a store');
      return store;
    },
    async cleanup() {
      if (store) {
        await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
        await store.close();
      }
    },
  };
}

export function kafkaLogFor(context: TestContext): KafkaLog {
  return new KafkaLog({
    brokers: context.config.kafka.brokers!,
    clientId: context.config.kafka.clientId,
    log: context.log,
  });
}
