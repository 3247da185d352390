/**
 * Stampedes through the whole API (issue 46): a hundred calls at once about one trader's resolved market,
 * with a key the API has never looked up, read the key once, the trader's name once and the summary once.
 * In the `api` role's reads (a store others write: no feed, lifetimes only) as in the `all` role's (an
 * embedded store its own worker follows). Counted by the statements the app sent to the store, each
 * recognized by the table it reads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withPublisher } from '../roles/runtime.ts';
import { createLogger } from '../log.ts';
import type { PlanId } from '../config.ts';
import type { Store } from '../projections/store.ts';
import { BASE_TS, makeResolution } from './factories.ts';
import { API, bodyOf, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { contractWorld } from './harness/contract-world.ts';

const config = inProcessConfig('stampede');
const NOW = BASE_TS + 86_400;
const CALLERS = 100;
const { alpha, won, markets, alphaFills } = contractWorld('stampede', NOW);
let keys: Record<PlanId, string>;

beforeAll(async () => {
  keys = await publishPlanKeys(config, NOW - 3600);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish('markets', markets);
    await publisher.publish('fillsArchive', alphaFills);
    await publisher.publish('markets', [makeResolution(won, 1, BASE_TS + 900)]);
  });
});

/** The store the app reads, as `kind` (a server store is not followed), every statement's SQL noted. */
function counting(kind: Store['kind'], sent: string[]): (store: Store) => Store {
  return (store) =>
    Object.freeze({
      ...store,
      database: store.database,
      kind,
      query: <Row>(...args: Parameters<Store['query']>): Promise<Row[]> => {
        sent.push(args[0]);
        return store.query<Row>(...args);
      },
    });
}

describe.each([
  ['api', 'server'],
  ['all', 'embedded'],
] as const)('role %s: a hundred callers at once, one read each of the key, the name and the answer', (_role, kind) => {
  const sent: string[] = [];
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi(config, { now: () => NOW, keys, wrapStore: counting(kind, sent) });
  });

  afterAll(async () => {
    await api?.close();
  });

  it('the summary of a resolved market', async () => {
    const url = `${API}/traders/${alpha}/markets/${won}/summary`;
    const answers = await Promise.all(Array.from({ length: CALLERS }, () => api.get(url, { plan: 'max' })));
    expect(answers.map((answer) => answer.statusCode)).toEqual(Array.from({ length: CALLERS }, () => 200));
    // Every caller got the same answer: the market won by token 1, bought 150 tokens for 40 + 26 USD.
    const bodies = new Set(answers.map((answer) => JSON.stringify(bodyOf(answer))));
    expect(bodies.size).toBe(1);
    expect(bodyOf(answers[0]!)).toMatchObject({
      market: { condition_id: won, resolved: true },
      summary: { fills_count: 2, buy_usd: 66 },
    });
    const reading = (table: string) => sent.filter((sql) => sql.includes(`{db:Identifier}.${table}`)).length;
    expect(reading('api_keys')).toBe(1);
    expect(reading('trader_names')).toBe(1);
    expect(reading('fills_v2')).toBe(1);
  });
});
