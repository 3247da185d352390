/**
 * On-chain-looking identifiers: condition ids, wallets, transaction hashes. All are pure functions of
 * the seed and of what they name, so that the same print always carries the same id.
 */
import { createHash } from 'node:crypto';
import { fmix32 } from './random.ts';

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A market id: 0x plus the SHA-256 of the seed and the market's slug. */
export function conditionIdOf(seed: number, slug: string): string {
  return `0x${sha256Hex(`${seed}:market:${slug}`)}`;
}

/** A wallet: 0x plus 40 lower-case hex digits. */
export function walletOf(seed: number, traderIndex: number): string {
  return `0x${sha256Hex(`${seed}:wallet:${traderIndex}`).slice(0, 40)}`;
}

/** The eight 32-bit words of a 0x + 64 hex id. */
export function idWords(id: string): Uint32Array {
  const words = new Uint32Array(8);
  for (let index = 0; index < 8; index++) words[index] = Number.parseInt(id.slice(2 + index * 8, 10 + index * 8), 16);
  return words;
}

/** Scratch space for one hash: hex-encoding a buffer beats concatenating 32 byte strings. */
const HASH_BYTES = Buffer.alloc(32);
const HASH_VIEW = new DataView(HASH_BYTES.buffer, HASH_BYTES.byteOffset, 32);

const WORD_SALTS = [
  0x68e31da4, 0xb5297a4d, 0x1b56c4e9, 0x7feb352d, 0x846ca68b, 0x2c1b3c6d, 0x297a2d39, 0x9e3779b9,
] as const;

export interface LogPosition {
  txHash: string;
  logIndex: number;
}

/**
 * The transaction hash and log index of the `counter`-th on-chain log of a market. Within a market,
 * distinct counters give distinct hashes (each word is a bijection of the counter for a fixed market);
 * across markets the words differ with the market's id.
 */
export function logPositionOf(marketWords: Uint32Array, counter: number): LogPosition {
  const mixedCounter = fmix32(Math.imul(counter >>> 0, 0x2c1b3c6d) ^ 0x297a2d39);
  for (let index = 0; index < 8; index++) {
    HASH_VIEW.setUint32(index * 4, fmix32(marketWords[index]! ^ fmix32(mixedCounter ^ WORD_SALTS[index]!)));
  }
  return { txHash: `0x${HASH_BYTES.toString('hex')}`, logIndex: fmix32(mixedCounter ^ 0x85ebca6b) % 512 };
}
