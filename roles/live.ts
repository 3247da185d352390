/**
 * Role `live`: the live plane alone (docs/live.md), scaled apart from the API. Stateless: each instance
 * reads the topics it streams from Kafka in a consumer group of its own, from the latest offset
 * (ingest/live-feed.ts), keeps its connections' slots in Redis (`REDIS_URL`: a user's slots count on
 * every instance, and a dead instance's lapse with their lease), publishes its recordings back on the
 * log, and reads keys, market names and library usage from the ClickHouse server (`CLICKHOUSE_URL`).
 * It serves the same HTTP application as `api`; the deployment routes `{base_url}/live` to it
 * (deploy/k8s/components/live). The embedded default has no Kafka: `all` runs the plane in process.
 */
import type { Config } from '../config.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { openEventLog } from '../ingest/worker.ts';
import type { Logger } from '../log.ts';
import { buildRoleServer } from './http-server.ts';
import { openMigratedStore, shutdownSignal } from './runtime.ts';

export async function runLive(config: Config, log: Logger): Promise<number> {
  if (!config.kafka.brokers) {
    log.error(
      'the live role reads the log from Kafka: set KAFKA_BROKERS (the embedded default runs the live plane inside `all`)',
    );
    return 2;
  }
  const signal = shutdownSignal(log, config.shutdown.graceMs);
  const store = await openMigratedStore(config, log);
  const eventLog = openEventLog(config, log);
  const topics = new TopicNames(config.kafka.topicPrefix);
  const producer = await eventLog.producer();
  const publisher = new EventPublisher(producer, topics);
  const app = await buildRoleServer({
    log,
    store,
    readiness: () => ({ ready: true, detail: {} }),
    config,
    plane: { eventLog, topics, publisher },
  });
  const address = await app.listen({ host: config.http.host, port: config.http.port });
  log.info({ address, store: store.kind, prefix: config.api.prefix }, 'live plane listening');
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  // The plane tells its clients why they are disconnected and stops its feed before the server closes (and
  // with it the gate and slot stores).
  await app.close();
  await producer.close();
  await eventLog.close();
  await store.close();
  return 0;
}
