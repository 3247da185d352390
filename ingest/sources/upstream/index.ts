/**
 * The upstream source (its role is roles/upstream.ts): polls Polymarket's public APIs (Gamma, the data API, user-pnl) and publishes what
 * the projections consume (markets, fills.upstream, positions, trades, upstream.profiles,
 * upstream.equity, upstream.status, upstream.leaderboard). With KAFKA_BROKERS it publishes to Kafka; without,
 * to the in-process log of an in-process ingest worker (a laptop trial against embedded ClickHouse).
 */
import type { Config } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import { UpstreamHttpClient, systemClock, type Clock } from './http-client.ts';

export { UpstreamHttpClient, systemClock } from './http-client.ts';
export type { Clock } from './http-client.ts';
export { UpstreamPoller } from './poller.ts';
export type { RejectionReport } from './poller.ts';
export { FileStateStore } from './state.ts';
export { MemoryRequestedWallets, RedisRequestedWallets } from './requests.ts';

export function createUpstreamClient(
  config: Config,
  log: Logger,
  clock: Clock = systemClock,
  onBreakerChange?: (state: string) => void,
): UpstreamHttpClient {
  const upstream = config.upstream;
  return new UpstreamHttpClient({
    baseUrls: upstream.baseUrls,
    limits: upstream.limits,
    rateFraction: upstream.rateFraction,
    timeoutMs: upstream.timeoutMs,
    maxRetries: upstream.maxRetries,
    backoffBaseMs: upstream.backoffBaseMs,
    backoffMaxMs: upstream.backoffMaxMs,
    breaker: upstream.breaker,
    clock,
    log: log.child({ name: 'upstream-http' }),
    ...(onBreakerChange ? { onBreakerChange } : {}),
  });
}
