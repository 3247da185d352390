/**
 * One Polygon log in, one domain fact out. viem decodes the ABI (the event chosen by topic0, each input
 * read as its word); the rules of DECODING.md that turn the inputs into a fact are decode-rules.ts's.
 */
import { decodeAbiParameters, type AbiParameter, type Hex } from 'viem';
import { EVENTS_BY_TOPIC0, type KnownEvent } from './abi.ts';
import { interpret, OutOfDomain, type Decoded } from './decode-rules.ts';

/** A log as eth_getLogs returns it (quantities hex-encoded). */
export interface RawLog {
  address: string;
  topics: readonly string[];
  data: string;
  blockNumber: string;
  transactionHash: string;
  logIndex?: string;
  /** Newer nodes add the block's timestamp to each log. */
  blockTimestamp?: string;
  blockHash?: string;
  removed?: boolean;
}

/** Where a log sits on chain. */
export interface LogPosition {
  address: Hex;
  txHash: Hex;
  logIndex: number;
  blockNumber: number;
  /** Epoch seconds, when the log carried it (otherwise the archive reads the block header). */
  blockTimestamp: number | null;
}

export type DecodedLog = Decoded & LogPosition;

export class LogDecodeError extends Error {
  constructor(
    readonly position: Partial<LogPosition>,
    readonly reason: string,
  ) {
    super(`cannot decode log ${position.txHash ?? '?'}:${position.logIndex ?? '?'}: ${reason}`);
  }
}

const HASH = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const QUANTITY = /^0x[0-9a-fA-F]{1,15}$/;

/** A hex quantity of the node (block number, log index, timestamp) as a number; throws on anything else. */
function quantity(value: string, what: string): number {
  if (typeof value !== 'string' || !QUANTITY.test(value))
    throw new Error(`${what} is not a hex quantity: ${String(value).slice(0, 80)}`);
  return Number(value);
}

/**
 * Where a log sits, read once at the boundary: the node's strings are checked here (a transaction hash of 32
 * bytes, hex quantities), so the events built from them need no second validation before they are published.
 */
function positionOf(log: RawLog): LogPosition {
  if (typeof log.transactionHash !== 'string' || !HASH.test(log.transactionHash))
    throw new Error(`transactionHash is not 32 bytes of hex: ${String(log.transactionHash).slice(0, 80)}`);
  if (typeof log.address !== 'string' || !ADDRESS.test(log.address))
    throw new Error(`address is not 20 bytes of hex: ${String(log.address).slice(0, 80)}`);
  return {
    address: log.address.toLowerCase() as Hex,
    txHash: log.transactionHash.toLowerCase() as Hex,
    logIndex: log.logIndex === undefined ? 0 : quantity(log.logIndex, 'logIndex'),
    blockNumber: quantity(log.blockNumber, 'blockNumber'),
    blockTimestamp: log.blockTimestamp === undefined ? null : quantity(log.blockTimestamp, 'blockTimestamp'),
  };
}

/**
 * Decodes one log; null when its topic0 is none of ours. Throws LogDecodeError when the topic0 is ours but
 * the bytes do not fit the event (the archive dead-letters it with this reason).
 */
export function decodeLog(log: RawLog): DecodedLog | null {
  const known = knownEventOf(log);
  if (!known) return null;
  const position = positionOfKnown(known, log);
  return withPosition(decodeFact(known, log, position), position);
}

/** The event a log's topic0 names; undefined when it is none of ours. The first step of decodeLog. */
export function knownEventOf(log: Pick<RawLog, 'topics'>): KnownEvent | undefined {
  const first = Array.isArray(log.topics) ? log.topics[0] : undefined;
  const topic0 = typeof first === 'string' ? first.toLowerCase() : undefined;
  return topic0 === undefined ? undefined : EVENTS_BY_TOPIC0.get(topic0);
}

/** Where a log of a known event sits; LogDecodeError when the node's fields are not what they must be. The second step. */
export function positionOfKnown(known: KnownEvent, log: RawLog): LogPosition {
  try {
    return positionOf(log);
  } catch (error) {
    throw new LogDecodeError({}, `${known.rule}: ${(error as Error).message}`);
  }
}

/**
 * The fact a known event's topics and data state, without its position; LogDecodeError when the bytes do
 * not fit the event. The third step (the one the decode workers run: viem's ABI decoding and the rules).
 */
export function decodeFact(
  known: KnownEvent,
  log: Pick<RawLog, 'topics' | 'data'>,
  position: Partial<LogPosition>,
): Decoded {
  let args: Record<string, unknown>;
  try {
    args = decodeArgs(known, log);
  } catch (error) {
    throw new LogDecodeError(position, `${known.rule}: ${(error as Error).message.split('\n')[0]}`);
  }
  try {
    return interpret(known.rule, known.event.name, args);
  } catch (error) {
    if (error instanceof OutOfDomain) throw new LogDecodeError(position, `${known.rule}: ${error.message}`);
    throw error;
  }
}

/** The fact and its position as one object: the position is written onto the fact, not spread into a copy. */
export function withPosition(fact: Decoded, position: LogPosition): DecodedLog {
  const decoded = fact as DecodedLog;
  decoded.address = position.address;
  decoded.txHash = position.txHash;
  decoded.logIndex = position.logIndex;
  decoded.blockNumber = position.blockNumber;
  decoded.blockTimestamp = position.blockTimestamp;
  return decoded;
}

/** A log of one of our events whose bytes do not fit it: the reason the archive dead-letters it with. */
export interface LogDecodeFailure {
  kind: 'decodeError';
  reason: string;
}

/** What decoding one log yields: the fact, null (not one of our events), or the reason it cannot be decoded. */
export type Decoding = DecodedLog | null | LogDecodeFailure;

/**
 * Decodes a batch of logs in order, the same on the main thread and in a decode worker: a LogDecodeError
 * becomes its log's failure, any other error (a bug, not the log's bytes) is thrown and fails the batch.
 */
export function decodeBatch(logs: readonly RawLog[]): Decoding[] {
  const out = new Array<Decoding>(logs.length);
  for (let index = 0; index < logs.length; index++) {
    try {
      out[index] = decodeLog(logs[index]!);
    } catch (error) {
      if (!(error instanceof LogDecodeError)) throw error;
      out[index] = { kind: 'decodeError', reason: error.reason };
    }
  }
  return out;
}

const TOPIC = /^0x[0-9a-fA-F]{64}$/;

/**
 * The parameter lists viem decodes: each `address` input read as the 32-byte word it is encoded in (`bytes32`),
 * then cut to its last 20 bytes by `assign`. viem's own address decoding takes the same last 20 bytes and
 * then computes their EIP-55 checksum (a keccak per address, behind an LRU cache), which the rules lower-case
 * again; reading the word skips that work, and yields the same lower-case address.
 */
interface WordParams {
  indexed: readonly AbiParameter[];
  nonIndexed: readonly AbiParameter[];
  read: readonly AbiParameter[];
}

const asWords = (params: readonly AbiParameter[]): readonly AbiParameter[] =>
  params.map((param) => {
    if (param.type === 'address') return { ...param, type: 'bytes32' };
    if (param.type.includes('address') || param.type.startsWith('tuple'))
      throw new Error(`the decoder reads no ${param.type} input (${param.name})`);
    return param;
  });

const WORD_PARAMS = new Map<KnownEvent, WordParams>(
  [...EVENTS_BY_TOPIC0.values()].map((known) => [
    known,
    { indexed: asWords(known.indexed), nonIndexed: asWords(known.nonIndexed), read: asWords(known.read) },
  ]),
);

/**
 * What viem's decodeEventLog does, with the event already chosen by topic0 (decodeEventLog recomputes the
 * selector, a keccak of the signature, on every call). Events whose inputs are all static (the fills, the
 * registrations) are one ABI tuple: the indexed topics' words followed by the data words, decoded by viem in
 * one call. The others: the topics in one call, the data in another.
 */
function decodeArgs(known: KnownEvent, log: Pick<RawLog, 'topics' | 'data'>): Record<string, unknown> {
  const { indexed, nonIndexed, event } = known;
  const wordParams = WORD_PARAMS.get(known)!;
  const topics = log.topics;
  if (topics.length !== indexed.length + 1)
    throw new Error(`expected ${indexed.length + 1} topics, got ${topics.length}`);
  let words = '';
  for (let index = 1; index < topics.length; index++) {
    const topic = topics[index]!;
    // Indexed dynamic types are hashed; none of ours are, so every topic is one 32-byte word.
    if (typeof topic !== 'string' || !TOPIC.test(topic)) throw new Error(`topic ${index} is not a 32-byte word`);
    words += topic.slice(2);
  }
  const data = log.data === '' ? '0x' : log.data;
  if (typeof data !== 'string' || !data.startsWith('0x')) throw new Error('data is not hex');
  const args: Record<string, unknown> = {};
  if (nonIndexed.length === 0) {
    if (data !== '0x') throw new Error(`${event.name} carries no data, got ${data.length} characters`);
    if (indexed.length > 0) assign(args, indexed, decodeAbiParameters(wordParams.indexed, bytesOf(words)));
  } else if (known.allStatic) {
    const expected = 2 + nonIndexed.length * 64;
    if (data.length < expected)
      throw new Error(`data of ${(data.length - 2) / 2} bytes, ${event.name} has ${nonIndexed.length} words`);
    assign(args, known.read, decodeAbiParameters(wordParams.read, bytesOf(words + data.slice(2))));
  } else {
    if (indexed.length > 0) assign(args, indexed, decodeAbiParameters(wordParams.indexed, bytesOf(words)));
    assign(args, nonIndexed, decodeAbiParameters(wordParams.nonIndexed, bytesOf(data.slice(2))));
  }
  return args;
}

/** Hex digits (no 0x) as bytes, by Node's native decoder; viem decodes the bytes as it would the hex. */
function bytesOf(hex: string): Uint8Array {
  const bytes = Buffer.from(hex, 'hex');
  if (bytes.length * 2 !== hex.length) throw new Error('data is not hex');
  return bytes;
}

/** The decoded values by input name; an `address` input (decoded as its word) is the word's last 20 bytes. */
function assign(args: Record<string, unknown>, params: readonly AbiParameter[], values: readonly unknown[]): void {
  for (let index = 0; index < params.length; index++) {
    const param = params[index]!;
    const value = values[index];
    args[param.name!] = param.type === 'address' ? `0x${(value as string).slice(26)}` : value;
  }
}
