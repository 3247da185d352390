/**
 * The `clob` role: Polymarket's CLOB market channel → the `book`, `trades` and `markets` topics
 * (ingest/sources/clob/, docs/clob.md). It runs apart from the live plane and learns what to subscribe
 * from what the deployment shares:
 *
 * - the markets watched now, on every live-plane instance: the slot store's watch index in Redis (a
 *   watch's slot names its market, under the slot's lease; REDIS_URL);
 * - the open markets of the popular shelf's traders, and every market's two tokens: the ClickHouse
 *   server the ingest workers fill (CLICKHOUSE_URL; embedded chDB belongs to one process).
 *
 * With KAFKA_BROKERS it publishes to Kafka; without, to an in-process ingest worker writing to that server.
 */
import type { ClobConfig, Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { ClobSource, type ClobInterest } from '../ingest/sources/clob/index.ts';
import { createUpstreamClient } from '../ingest/sources/upstream/index.ts';
import { openSlotStore } from '../operations/gates/open.ts';
import type { SlotStore } from '../operations/gates/slots.ts';
import { readMarketTokens, readOpenMarketsOf } from '../projections/clob-interest.ts';
import { readPopularTraders } from '../projections/popular.ts';
import { openStore, type Store } from '../projections/store.ts';
import { withPublisher } from './runtime.ts';

/** The markets to subscribe now: the watched ones first, then the popular traders' open ones; those with known tokens. */
export function clobInterest(
  store: Store,
  slots: SlotStore | null,
  config: ClobConfig,
  nowSeconds: () => number = () => Math.floor(Date.now() / 1000),
): ClobInterest {
  return {
    markets: async () => {
      const watched = slots ? [...(await slots.watchedMarkets(null))].sort() : [];
      const watching = slots ? await slots.watching(null) : new Map<string, number>();
      const shelf = await readPopularTraders(store, config.popularTraders, watching);
      const open = await readOpenMarketsOf(
        store,
        shelf.map((trader) => trader.wallet),
        nowSeconds() - config.openMarketSeconds,
        config.maxMarkets,
      );
      const wanted = [...new Set([...watched, ...open])];
      const tokens = await readMarketTokens(store, wanted);
      // The cap counts markets that can be subscribed: one without known tokens takes no place.
      return wanted
        .flatMap((conditionId) => {
          const pair = tokens.get(conditionId);
          return pair ? [{ conditionId, ...pair }] : [];
        })
        .slice(0, config.maxMarkets);
    },
  };
}

/** Runs the source until aborted; returns the exit code. */
export async function runClob(config: Config, log: Logger, signal: AbortSignal): Promise<number> {
  if (!config.clickhouse.url) {
    log.error(
      'the clob role reads the markets to subscribe and their tokens from a ClickHouse server: set CLICKHOUSE_URL',
    );
    return 2;
  }
  const store = await openStore(config.clickhouse);
  const slots = config.redis.url ? openSlotStore(config, log) : null;
  if (!slots)
    log.info("REDIS_URL is not set: no live-plane watches reach this role (the popular shelf's open markets only)");
  try {
    await withPublisher(config, log, async ({ publisher, eventLog, topics }) => {
      const producer = await eventLog.producer();
      // The CLOB's REST API, for a book the channel does not send: under its published limits, bounded in time and size.
      const http = createUpstreamClient(config, log);
      const source = new ClobSource({
        config: config.clob,
        interest: clobInterest(store, slots, config.clob),
        sink: publisher,
        reject: async (raw, reason) => {
          await producer.send(topics.deadLetter(), [
            { key: null, value: raw, headers: { 'dlq.reason': reason, 'dlq.origin': 'clob', 'dlq.what': 'message' } },
          ]);
        },
        log: log.child({ name: 'clob' }),
        fetchBook: async (tokenId, bookSignal) =>
          (await http.getJson('clob', '/book', { token_id: tokenId }, bookSignal)).body,
      });
      log.info({ url: config.clob.url, maxMarkets: config.clob.maxMarkets }, 'clob source started');
      try {
        await source.run(signal);
      } finally {
        await producer.close();
      }
    });
  } finally {
    await slots?.close();
    await store.close();
  }
  return 0;
}
