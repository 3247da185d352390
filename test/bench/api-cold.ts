/**
 * `npm run bench:api -- --cold` (issue 46): every answer read cold, one request at a time over distinct
 * wallets, over HTTP and in process, each beside the store's floor measured right after it: the wallet's
 * rows by primary key for answers about a trader, the trader's row of the market for answers about a
 * market. In process it also records the statements each answer ran and what each cost.
 *
 * Cold: each endpoint of each round gets a fresh app (its read caches empty) and a fresh in-process
 * reader; its API key and the store's kept facts (the upstream's report, the archive's ranges) are
 * warmed first by one request about a wallet outside the measured ones, as in a server that has been up.
 */
import type { Store } from '../../projections/store.ts';
import { median, percentile } from './support.ts';

const COLD_ENDPOINTS = ['card', 'markets', 'fills', 'summary', 'chart'] as const;
type ColdEndpoint = (typeof COLD_ENDPOINTS)[number];

interface Pair {
  wallet: string;
  conditionId: string;
}

export interface ColdBench<P extends Pair> {
  store: Store;
  /** One (wallet, market) pair per wallet: the measured ones, then one more for the warm-up. */
  pairs: readonly P[];
  wallets: number;
  rounds: number;
  authorization: string;
  urls: Record<ColdEndpoint, (pair: P) => string>;
  /** A fresh app on a port (its read caches empty). */
  freshApp(): Promise<{ address: string; close(): Promise<void> }>;
  /**
   * A fresh in-process reader over `store`: each endpoint's read as its route runs it, the trader's name
   * read beside the answer's own reads.
   */
  freshReads(store: Store): Promise<Record<ColdEndpoint, (pair: P) => Promise<unknown>>>;
}

const WALLET_ROWS = 'SELECT wallet_row FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String}';
const MARKET_ROW = `SELECT wallet_row FROM {db:Identifier}.trader_markets_v2
  WHERE wallet = {wallet:String} AND condition_id = {condition_id:String} ORDER BY version DESC LIMIT 1`;

const f = (value: number) => (Number.isNaN(value) ? '-' : value.toFixed(1));

/** A statement's name in the breakdown: the tables it reads, in order ("a+b": a bundle's parts). */
function statementName(sql: string): string {
  const tables = [...sql.matchAll(/\{db:Identifier\}\.(\w+)/g)].map((match) => match[1]!);
  return tables.length === 0 ? sql.replace(/\s+/g, ' ').trim().slice(0, 30) : tables.join('+');
}

/** The same store; each query's SQL text and duration appended to `calls` once it ends. */
function recording(store: Store, calls: { sql: string; ms: number }[]): Store {
  return Object.freeze({
    ...store,
    database: store.database,
    kind: store.kind,
    query: async <Row>(...args: Parameters<Store['query']>): Promise<Row[]> => {
      const started = performance.now();
      try {
        return await store.query<Row>(...args);
      } finally {
        calls.push({ sql: args[0], ms: performance.now() - started });
      }
    },
  });
}

export async function coldReads<P extends Pair>(bench: ColdBench<P>): Promise<void> {
  const measured = bench.pairs.slice(0, bench.wallets);
  const spare = bench.pairs[bench.wallets];
  if (!spare || measured.length < bench.wallets)
    throw new Error(`--cold needs ${bench.wallets + 1} wallets, the world has ${bench.pairs.length}`);
  const floorOf = async (endpoint: ColdEndpoint, pair: P) => {
    const started = performance.now();
    if (endpoint === 'summary' || endpoint === 'chart')
      await bench.store.query(MARKET_ROW, { wallet: pair.wallet, condition_id: pair.conditionId });
    else await bench.store.query(WALLET_ROWS, { wallet: pair.wallet });
    return performance.now() - started;
  };
  const http: Record<ColdEndpoint, number[][]> = Object.fromEntries(COLD_ENDPOINTS.map((e) => [e, []])) as never;
  const inProcess: Record<ColdEndpoint, number[][]> = Object.fromEntries(COLD_ENDPOINTS.map((e) => [e, []])) as never;
  const floors: Record<ColdEndpoint, number[][]> = Object.fromEntries(COLD_ENDPOINTS.map((e) => [e, []])) as never;
  const statements: Record<ColdEndpoint, Map<string, number[]>> = Object.fromEntries(
    COLD_ENDPOINTS.map((e) => [e, new Map()]),
  ) as never;
  const perCall: Record<ColdEndpoint, number[]> = Object.fromEntries(COLD_ENDPOINTS.map((e) => [e, []])) as never;
  for (let round = 0; round < bench.rounds; round++) {
    for (const endpoint of COLD_ENDPOINTS) {
      // Over HTTP: a fresh app, warmed by one request about the spare wallet.
      const app = await bench.freshApp();
      const get = async (pair: P) => {
        const response = await fetch(`${app.address}${bench.urls[endpoint](pair)}`, {
          headers: { authorization: bench.authorization },
        });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`${bench.urls[endpoint](pair)} answered ${response.status}`);
      };
      await get(spare);
      const httpTimes: number[] = [];
      const httpFloors: number[] = [];
      for (const pair of measured) {
        const started = performance.now();
        await get(pair);
        httpTimes.push(performance.now() - started);
        httpFloors.push(await floorOf(endpoint, pair));
      }
      await app.close();
      // In process: a fresh reader on a store that records each statement.
      const calls: { sql: string; ms: number }[] = [];
      const reads = await bench.freshReads(recording(bench.store, calls));
      await reads[endpoint](spare);
      const times: number[] = [];
      const readFloors: number[] = [];
      for (const pair of measured) {
        calls.length = 0;
        const started = performance.now();
        await reads[endpoint](pair);
        times.push(performance.now() - started);
        perCall[endpoint].push(calls.length);
        for (const call of calls) {
          const name = statementName(call.sql);
          let list = statements[endpoint].get(name);
          if (!list) statements[endpoint].set(name, (list = []));
          list.push(call.ms);
        }
        readFloors.push(await floorOf(endpoint, pair));
      }
      http[endpoint].push(httpTimes);
      inProcess[endpoint].push(times);
      floors[endpoint].push([...httpFloors, ...readFloors]);
    }
  }
  console.log(
    `\ncold reads, one at a time over ${measured.length} wallets, ${bench.rounds} round(s): medians over the rounds of each round's p50 (p99), ms; ÷ the floor's p50 in the same round`,
  );
  console.log('  endpoint  HTTP p50 (p99)     ÷ floor  in process p50 (p99)  ÷ floor  floor p50  statements per call');
  const ratios: string[] = [];
  for (const endpoint of COLD_ENDPOINTS) {
    const roundsOf = (times: number[][], p: number) => median(times.map((round) => percentile(round, p)));
    const ratioOf = (times: number[][]) =>
      median(times.map((round, index) => percentile(round, 0.5) / percentile(floors[endpoint][index]!, 0.5)));
    const floor = roundsOf(floors[endpoint], 0.5);
    const httpRatio = ratioOf(http[endpoint]);
    const readRatio = ratioOf(inProcess[endpoint]);
    ratios.push(`${endpoint} ${httpRatio.toFixed(2)}× / ${readRatio.toFixed(2)}×`);
    console.log(
      `  ${endpoint.padEnd(8)}  ${`${f(roundsOf(http[endpoint], 0.5))} (${f(roundsOf(http[endpoint], 0.99))})`.padEnd(17)}  ${httpRatio.toFixed(2).padStart(6)}×  ` +
        `${`${f(roundsOf(inProcess[endpoint], 0.5))} (${f(roundsOf(inProcess[endpoint], 0.99))})`.padEnd(20)}  ${readRatio.toFixed(2).padStart(6)}×  ` +
        `${f(floor).padStart(9)}  ${median(perCall[endpoint])}`,
    );
  }
  console.log(
    '  in process, each statement of a cold answer: calls, p50 ms (statements of one answer may run side by side)',
  );
  for (const endpoint of COLD_ENDPOINTS) {
    const cells = [...statements[endpoint]].map(([name, times]) => `${name} ${times.length}× ${f(median(times))}`);
    console.log(`  ${endpoint.padEnd(8)}  ${cells.join('; ')}`);
  }
  console.log(`cold ÷ floor (HTTP / in process): ${ratios.join(', ')}; target ≤ 2×`);
}
