/**
 * What crosses between the archive's main thread and its decode workers (decode-pool.ts, decode-worker.ts).
 */
import type { DecodedLog, Decoding, RawLog } from './decode.ts';

/** A batch to a worker, by structured clone (the logs as the node answered them). */
export interface DecodeRequest {
  id: number;
  logs: readonly RawLog[];
}

/** The batch's decodings (packed), or the error decoding it threw (not a log's own failure: those are decodings). */
export type DecodeReply = { id: number; decodings: PackedDecodings } | { id: number; error: { name: string; message: string; stack: string } };

type Fill = Extract<DecodedLog, { kind: 'orderFilled' }>;

/**
 * Decodings as they cross back to the main thread. Fills, nearly every log, travel as columns: their numbers
 * in one Float64Array (moved, not copied), their hex strings and token ids in flat arrays. A structured clone
 * of plain objects writes and reads every property name of every object; that cost the main thread as much
 * as a third of what it saved by not decoding. Every other decoding travels as the object it is.
 */
export interface PackedDecodings {
  /** Per log: 1 a fill (next in the columns), 0 the next of `others`. */
  fill: Uint8Array<ArrayBuffer>;
  others: Decoding[];
  /** FILL_NUMBERS per fill. */
  numbers: Float64Array<ArrayBuffer>;
  /** FILL_STRINGS per fill. */
  strings: string[];
  tokenIds: bigint[];
}

const FILL_NUMBERS = 9;
const FILL_STRINGS = 5;
const V2 = 1;
const SELL = 2;
const FEE_IN_TOKENS = 4;

export function packDecodings(decodings: readonly Decoding[]): PackedDecodings {
  const fill = new Uint8Array(decodings.length);
  const fills: Fill[] = [];
  const others: Decoding[] = [];
  for (let index = 0; index < decodings.length; index++) {
    const decoding = decodings[index]!;
    if (decoding !== null && decoding.kind === 'orderFilled') {
      fill[index] = 1;
      fills.push(decoding);
    } else others.push(decoding);
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
    numbers[n + 5] = one.logIndex;
    numbers[n + 6] = one.blockNumber;
    numbers[n + 7] = one.blockTimestamp ?? Number.NaN;
    numbers[n + 8] = (one.era === 'v2' ? V2 : 0) | (one.side === 'SELL' ? SELL : 0) | (one.feeUnit === 'tokens' ? FEE_IN_TOKENS : 0);
    const s = index * FILL_STRINGS;
    strings[s] = one.orderHash;
    strings[s + 1] = one.maker;
    strings[s + 2] = one.taker;
    strings[s + 3] = one.address;
    strings[s + 4] = one.txHash;
    tokenIds[index] = one.tokenId;
  }
  return { fill, others, numbers, strings, tokenIds };
}

export function unpackDecodings(packed: PackedDecodings): Decoding[] {
  const { fill, others, numbers, strings, tokenIds } = packed;
  const out = new Array<Decoding>(fill.length);
  let fills = 0;
  let other = 0;
  for (let index = 0; index < fill.length; index++) {
    if (fill[index] === 0) {
      out[index] = others[other++]!;
      continue;
    }
    const n = fills * FILL_NUMBERS;
    const s = fills * FILL_STRINGS;
    const flags = numbers[n + 8]!;
    const blockTimestamp = numbers[n + 7]!;
    const decoded: Fill = {
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
      address: strings[s + 3] as Fill['address'],
      txHash: strings[s + 4] as Fill['txHash'],
      logIndex: numbers[n + 5]!,
      blockNumber: numbers[n + 6]!,
      blockTimestamp: Number.isNaN(blockTimestamp) ? null : blockTimestamp,
    };
    out[index] = decoded;
    fills++;
  }
  return out;
}
