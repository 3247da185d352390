/**
 * Test factories with partial overrides: `makeFill({ wallet, usd: 10 })`. Ids are unique per call and
 * deterministic within a run (a counter), so failures reproduce.
 */
import { createHash } from 'node:crypto';
import type { EventInputOf } from '../ingest/contract/topics.ts';
import type { ResolutionSource } from '../projections/vocabulary.ts';

let counter = 0;
const next = () => ++counter;

function hex(seed: string, length: number): string {
  let out = '';
  for (let round = 0; out.length < length; round++) {
    out += createHash('sha256').update(`${seed}:${round}`).digest('hex');
  }
  return out.slice(0, length);
}

export const makeWallet = (label: string | number = next()): string => `0x${hex(`wallet:${label}`, 40)}`;
export const makeConditionId = (label: string | number = next()): string => `0x${hex(`market:${label}`, 64)}`;
export const makeTxHash = (label: string | number = next()): string => `0x${hex(`tx:${label}`, 64)}`;

/** 2026-01-04 20:00 UTC: inside the period of the real exports in ../shared. */
export const BASE_TS = 1_767_556_800;

export function makeMarket(
  overrides: Partial<EventInputOf<'markets'> & { type: 'metadata' }> = {},
): EventInputOf<'markets'> {
  return {
    type: 'metadata',
    condition_id: makeConditionId(),
    title: 'Bitcoin Up or Down - January 4, 3:00PM-3:15PM ET',
    slug: 'btc-updown-15m-1767556800',
    outcome1: 'Up',
    outcome2: 'Down',
    category: 'crypto',
    title_start_ts: BASE_TS,
    end_ts: BASE_TS + 900,
    version: BASE_TS - 60,
    ...overrides,
  };
}

export function makeResolution(
  conditionId: string,
  winner: 1 | 2,
  ts = BASE_TS + 900,
  source?: ResolutionSource,
): EventInputOf<'markets'> {
  return { type: 'resolution', condition_id: conditionId, winner_token_side: winner, ts, ...(source && { source }) };
}

export function makeFill(overrides: Partial<EventInputOf<'fillsArchive'>> = {}): EventInputOf<'fillsArchive'> {
  const n = next();
  const price = overrides.price ?? 0.42;
  const size = overrides.size_tokens ?? 100;
  return {
    tx_hash: makeTxHash(n),
    log_index: n % 500,
    wallet: makeWallet('default'),
    condition_id: makeConditionId('default'),
    side: 'BUY',
    token_side: 1,
    price,
    size_tokens: size,
    usd: Math.round(price * size * 1e6) / 1e6,
    role: 'taker',
    era: 'v2',
    ts: BASE_TS + (n % 900),
    ...overrides,
  };
}

export function makeLeg(overrides: Partial<EventInputOf<'positions'>> = {}): EventInputOf<'positions'> {
  const n = next();
  return {
    tx_hash: makeTxHash(`leg${n}`),
    log_index: n % 500,
    wallet: makeWallet('default'),
    condition_id: makeConditionId('default'),
    kind: 'SPLIT',
    tokens: 50,
    usd: 50,
    era: 'v2',
    ts: BASE_TS + (n % 900),
    ...overrides,
  };
}

export function makeTrade(overrides: Partial<EventInputOf<'trades'>> = {}): EventInputOf<'trades'> {
  const n = next();
  const price = overrides.price ?? 0.5;
  const size = overrides.size_tokens ?? 10;
  return {
    tx_hash: makeTxHash(`trade${n}`),
    log_index: n % 500,
    condition_id: makeConditionId('default'),
    token_side: 1,
    price,
    size_tokens: size,
    usd: Math.round(price * size * 1e6) / 1e6,
    ts: BASE_TS + (n % 900),
    seq: n,
    ...overrides,
  };
}

/** The deterministic PRNG of seeded answers, for test data too: the same data set on every run of a seed. */
export { mulberry32 } from '../projections/random.ts';
