/**
 * Role `api`: the read API alone (stateless; run M of them behind a load balancer) against the
 * configured store, normally a ClickHouse server (`CLICKHOUSE_URL`), with the gates in Redis
 * (`REDIS_URL`: every instance draws on the same budgets). Embedded chDB works too, but only
 * when no other process holds the same data directory.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { buildRoleServer } from './http-server.ts';
import { openMigratedStore, shutdownSignal, warnIfThreadPoolShort } from './runtime.ts';
import { openWalletRequestLog } from '../operations/wallet-requests.ts';

export async function runApi(config: Config, log: Logger): Promise<number> {
  const signal = shutdownSignal(log, config.shutdown.graceMs);
  warnIfThreadPoolShort(config, log);
  const store = await openMigratedStore(config, log);
  const walletRequests = openWalletRequestLog(config, log);
  // No log here, so no live plane; `/me` still reports the slots the live plane holds (shared in Redis).
  const app = await buildRoleServer({
    log,
    store,
    readiness: () => ({ ready: true, detail: {} }),
    config,
    walletRequests,
  });
  const address = await app.listen({ host: config.http.host, port: config.http.port });
  log.info({ address, store: store.kind, prefix: config.api.prefix }, 'listening');
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  // Stop taking requests, finish those in flight (the gate and slot stores close with the server), then
  // release the store.
  await app.close();
  await walletRequests?.close();
  await store.close();
  return 0;
}
