/**
 * Role `api`: the read API alone (stateless; run M of them behind a load balancer) against the
 * configured store, normally a ClickHouse server (`CLICKHOUSE_URL`), with the gates in Redis
 * (`REDIS_URL`: every instance draws on the same budgets). Embedded chDB works too, but only
 * when no other process holds the same data directory.
 */
import type { Config } from '../config.ts';
import { storeAnswers } from '../projections/store.ts';
import type { Logger } from '../log.ts';
import { buildHttpServer } from './http-server.ts';
import { openGateStore, openSlotStore } from '../operations/gates/open.ts';
import { openMigratedStore, shutdownSignal, warnIfThreadPoolShort } from './runtime.ts';
import { openWalletRequestLog } from '../operations/wallet-requests.ts';

export async function runApi(config: Config, log: Logger): Promise<number> {
  const signal = shutdownSignal(log, config.shutdown.graceMs);
  warnIfThreadPoolShort(config, log);
  const store = await openMigratedStore(config, log);
  const gates = openGateStore(config, log);
  // No log here, so no live plane; `/me` still reports the slots the live plane holds (shared in Redis).
  const slots = openSlotStore(config, log);
  const walletRequests = openWalletRequestLog(config, log);
  const app = await buildHttpServer({
    log,
    storeAlive: () => storeAnswers(store),
    readiness: () => ({ ready: true, detail: {} }),
    api: { config, store, gates, slots, ...(walletRequests ? { walletRequests } : {}) },
  });
  const address = await app.listen({ host: config.http.host, port: config.http.port });
  log.info({ address, store: store.kind, prefix: config.api.prefix }, 'listening');
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  // Stop taking requests, finish those in flight, then release the store.
  await app.close();
  await gates.close();
  await slots.close();
  await walletRequests?.close();
  await store.close();
  return 0;
}
