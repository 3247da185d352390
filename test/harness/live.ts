/**
 * A listening server whose live plane is fed by its own in-process log (the embedded default's wiring):
 * what the live plane's browser test and bench:live start. Publish on `publisher` to reach the plane.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.ts';
import { MemoryLog } from '../../ingest/bus/memory.ts';
import { TopicNames } from '../../ingest/contract/topics.ts';
import { startLiveFeed } from '../../ingest/live-feed.ts';
import { EventPublisher } from '../../ingest/publisher.ts';
import type { Logger } from '../../log.ts';
import { MemorySlots } from '../../operations/gates/slots.ts';
import { openStore } from '../../projections/store.ts';
import { buildHttpServer } from '../../roles/http-server.ts';

export interface LiveServer {
  app: FastifyInstance;
  /** http://127.0.0.1:<port> */
  origin: string;
  /** The plane's path: `{prefix}{live.path}`. */
  livePath: string;
  publisher: EventPublisher;
  close(): Promise<void>;
}

export async function startLiveServer(
  config: Config,
  log: Logger,
  retainedBytes = 64 * 1024 * 1024,
): Promise<LiveServer> {
  const store = await openStore(config.clickhouse);
  const eventLog = new MemoryLog({ partitions: 2, maxRetainedBytes: retainedBytes, log });
  const topics = new TopicNames(config.kafka.topicPrefix);
  const publisher = new EventPublisher(await eventLog.producer(), topics);
  const app = await buildHttpServer({
    log,
    storeAlive: async () => true,
    readiness: () => ({ ready: true, detail: {} }),
    api: {
      config,
      store,
      slots: new MemorySlots(),
      liveFeed: (plane) => startLiveFeed({ config, eventLog, topics, target: plane, log }),
    },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    app,
    origin: `http://127.0.0.1:${port}`,
    livePath: `${config.api.prefix}${config.live.path}`,
    publisher,
    async close() {
      await app.close();
      await eventLog.close();
      await store.close();
    },
  };
}
