/**
 * Starts the services the integration suite needs, once per run: a Kafka-protocol cluster (from
 * KAFKA_BROKERS when set, else librdkafka mock brokers via kcat). Each test then uses its own topic
 * prefix, consumer group and ClickHouse database, so tests never see each other's data.
 */
import type { TestProject } from 'vitest/node';
import { parseConfig } from '../../config.ts';
import { startMockKafka, type MockKafka } from './kafka-mock.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string[];
  }
}

let mock: MockKafka | undefined;

export async function setup(project: TestProject): Promise<void> {
  const fromEnvironment = parseConfig(process.env).kafka.brokers;
  if (fromEnvironment && fromEnvironment.length > 0) {
    project.provide('kafkaBrokers', fromEnvironment);
    return;
  }
  mock = await startMockKafka();
  project.provide('kafkaBrokers', mock.brokers);
}

export async function teardown(): Promise<void> {
  await mock?.stop();
}
