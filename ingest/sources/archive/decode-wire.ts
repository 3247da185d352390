/**
 * What crosses between the archive's main thread and its decode workers (decode-pool.ts, decode-worker.ts).
 *
 * decodeLog is three steps: the event by topic0, the log's position (its node fields checked), then the fact
 * from its topics and data (viem's ABI decoding and the rules). The main thread takes the first two, which
 * are cheap, and sends a worker only what the third reads: each log's topics and data. A structured clone
 * copies every string and writes and reads every property name of every object; sending the five position
 * fields and getting them back cost about as much as the clone of what the worker needs. The facts come back
 * packed (below), and the main thread writes each position onto its fact, as decodeLog does.
 */
import {
  decodeFact,
  knownEventOf,
  LogDecodeError,
  withPosition,
  type Decoding,
  type LogDecodeFailure,
  type LogPosition,
  type RawLog,
} from './decode.ts';
import type { Decoded } from './decode-rules.ts';

/** A batch to a worker: the topics and data of logs of our events whose positions are checked. */
export interface DecodeRequest {
  id: number;
  topics: RawLog['topics'][];
  data: RawLog['data'][];
}

/** The batch's facts (packed), or the error decoding it threw (not a log's own failure: those are facts). */
export type DecodeReply =
  | { id: number; facts: PackedFacts }
  | { id: number; error: { name: string; message: string; stack: string } };

type Fact = Decoded | LogDecodeFailure;
type Fill = Extract<Decoded, { kind: 'orderFilled' }>;

/**
 * Facts as they cross back. Fills, nearly every log, travel as columns: their numbers in one Float64Array
 * (moved, not copied), their hex strings and token ids in flat arrays, with no property names. Every other
 * fact (and every decode failure) travels as the object it is.
 */
export interface PackedFacts {
  /** Per log: 1 a fill (next in the columns), 0 the next of `others`. */
  fill: Uint8Array<ArrayBuffer>;
  others: Fact[];
  /** FILL_NUMBERS per fill. */
  numbers: Float64Array<ArrayBuffer>;
  /** FILL_STRINGS per fill. */
  strings: string[];
  tokenIds: bigint[];
}

const FILL_NUMBERS = 6;
const FILL_STRINGS = 3;
const V2 = 1;
const SELL = 2;
const FEE_IN_TOKENS = 4;

/** The worker's step: each log's fact, or its decode failure; any other error fails the batch. */
export function decodeFacts(request: Pick<DecodeRequest, 'topics' | 'data'>): Fact[] {
  const facts = new Array<Fact>(request.topics.length);
  for (let index = 0; index < facts.length; index++) {
    const log = { topics: request.topics[index]!, data: request.data[index]! };
    const known = knownEventOf(log);
    if (known === undefined) throw new Error('a decode worker was sent a log of no known event');
    try {
      facts[index] = decodeFact(known, log, {});
    } catch (error) {
      if (!(error instanceof LogDecodeError)) throw error;
      facts[index] = { kind: 'decodeError', reason: error.reason };
    }
  }
  return facts;
}

export function packFacts(facts: readonly Fact[]): PackedFacts {
  const fill = new Uint8Array(facts.length);
  const fills: Fill[] = [];
  const others: Fact[] = [];
  for (let index = 0; index < facts.length; index++) {
    const fact = facts[index]!;
    if (fact.kind === 'orderFilled') {
      fill[index] = 1;
      fills.push(fact);
    } else others.push(fact);
  }
  const numbers = new Float64Array(fills.length * FILL_NUMBERS);
  const strings = new Array<string>(fills.length * FILL_STRINGS);
  const tokenIds = new Array<bigint>(fills.length);
  for (let index = 0; index < fills.length; index++) {
    const one = fills[index]!;
    const n = index * FILL_NUMBERS;
    numbers[n] = one.tokens;
    numbers[n + 1] = one.usd;
    numbers[n + 2] = one.price;
    numbers[n + 3] = one.fee;
    numbers[n + 4] = one.feeUsd;
    numbers[n + 5] =
      (one.era === 'v2' ? V2 : 0) | (one.side === 'SELL' ? SELL : 0) | (one.feeUnit === 'tokens' ? FEE_IN_TOKENS : 0);
    const s = index * FILL_STRINGS;
    strings[s] = one.orderHash;
    strings[s + 1] = one.maker;
    strings[s + 2] = one.taker;
    tokenIds[index] = one.tokenId;
  }
  return { fill, others, numbers, strings, tokenIds };
}

/** The main thread's step: each fact with its position (as decodeLog returns it), into `out` at `at[index]`. */
export function unpackFacts(
  packed: PackedFacts,
  positions: readonly LogPosition[],
  at: readonly number[],
  out: Decoding[],
): void {
  const { fill, others, numbers, strings, tokenIds } = packed;
  let fills = 0;
  let other = 0;
  for (let index = 0; index < fill.length; index++) {
    const position = positions[index]!;
    if (fill[index] === 0) {
      const fact = others[other++]!;
      out[at[index]!] = fact.kind === 'decodeError' ? fact : withPosition(fact, position);
      continue;
    }
    const n = fills * FILL_NUMBERS;
    const s = fills * FILL_STRINGS;
    const flags = numbers[n + 5]!;
    out[at[index]!] = {
      kind: 'orderFilled',
      era: flags & V2 ? 'v2' : 'v1',
      orderHash: strings[s] as Fill['orderHash'],
      maker: strings[s + 1] as Fill['maker'],
      taker: strings[s + 2] as Fill['taker'],
      tokenId: tokenIds[fills]!,
      side: flags & SELL ? 'SELL' : 'BUY',
      tokens: numbers[n]!,
      usd: numbers[n + 1]!,
      price: numbers[n + 2]!,
      fee: numbers[n + 3]!,
      feeUnit: flags & FEE_IN_TOKENS ? 'tokens' : 'usd',
      feeUsd: numbers[n + 4]!,
      address: position.address,
      txHash: position.txHash,
      logIndex: position.logIndex,
      blockNumber: position.blockNumber,
      blockTimestamp: position.blockTimestamp,
    };
    fills++;
  }
}
