/**
 * One Polygon log in, one domain fact out. viem decodes the ABI; this module only applies the rules of
 * DECODING.md: 6-decimal amounts, the side of a V1 fill from which asset is 0, price = USD ÷ tokens, the
 * fee's unit (V2: USD; V1: a BUY's fee in tokens, a SELL's in USD), the trader is the `maker` topic.
 */
import { decodeAbiParameters, type AbiParameter, type Hex } from 'viem';
import { paddedV2Id } from '../../contract/positions-v2.ts';
import { redemptionPayout } from '../../contract/primitives.ts';
import { EVENTS_BY_TOPIC0, type KnownEvent } from './abi.ts';

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

/** USDC and outcome tokens both have 6 decimals. */
const UNIT = 1e6;

/**
 * The most base units of collateral (or of outcome tokens, each backed by one unit of it) one amount can
 * hold: the contract's MAX_AMOUNT. A larger uint256 is a forged or corrupt log, not a trade.
 */
const MAX_UNITS = BigInt(Number.MAX_SAFE_INTEGER);

/** A log of one of our events whose values lie outside what the contract can state: dead-lettered, never published. */
class OutOfDomain extends Error {}

function fromUnits(amount: bigint): number {
  return Number(amount) / UNIT;
}

export type Decoded =
  | {
      kind: 'orderFilled';
      era: 'v1' | 'v2';
      orderHash: Hex;
      /** The order's owner: the trader of this fill. */
      maker: Hex;
      /** The counterparty: the taker order's owner, or the exchange itself on the taker's own-order leg. */
      taker: Hex;
      tokenId: bigint;
      side: 'BUY' | 'SELL';
      tokens: number;
      usd: number;
      /** USD ÷ tokens, in the token's own frame. */
      price: number;
      /** The fee in its own unit, as the log states it. */
      fee: number;
      feeUnit: 'usd' | 'tokens';
      /** The fee in USD (a fee in tokens at this fill's price). */
      feeUsd: number;
    }
  | { kind: 'ordersMatched' }
  | { kind: 'tokenRegistered'; token0: bigint; token1: bigint; conditionId: Hex }
  | {
      kind: 'split' | 'merge';
      source: 'ctf' | 'negRiskAdapter';
      stakeholder: Hex;
      conditionId: Hex;
      /** USDC in (split) or out (merge); also the tokens of each side created or burned. */
      usd: number;
      /** CTF only: the collateral and whether it is the plain binary partition [1, 2] of a top-level position. */
      collateral: Hex | null;
      binaryTopLevel: boolean;
    }
  | {
      kind: 'redemption';
      source: 'ctf' | 'negRiskAdapter';
      redeemer: Hex;
      conditionId: Hex;
      usd: number;
      collateral: Hex | null;
      topLevel: boolean;
      /** CTF: the index sets redeemed. */
      indexSets: readonly bigint[];
      /** NegRiskAdapter: the tokens redeemed per outcome slot (6 decimals). */
      amounts: readonly number[];
    }
  | {
      kind: 'resolution';
      conditionId: Hex;
      oracle: Hex;
      questionId: Hex;
      outcomeSlotCount: number;
      payoutNumerators: readonly bigint[];
    }
  | { kind: 'converted'; stakeholder: Hex; marketId: Hex; indexSet: bigint; usd: number }
  /**
   * A Protocol V2 module's action for a user: a split (collateral in, `tokens` of both outcomes to the two
   * recipients), a merge (both outcomes burned, collateral out), a redemption of one position, a neg-risk
   * conversion (NO of one condition into YES of the others) or a horizontal split or merge (one YES of every
   * condition of an event for one collateral). Condition and event ids are 32 bytes (positions-v2.ts).
   */
  | {
      kind: 'v2Action';
      action: 'split' | 'merge' | 'redeem' | 'convert' | 'horizontalSplit' | 'horizontalMerge';
      initiator: Hex;
      /** Who receives what the action yields (a split's outcome 0). */
      recipient: Hex;
      /** A split's outcome-1 recipient; the recipient otherwise. */
      recipient1: Hex;
      /** The condition (split, merge), the position (redeem: its id as 32 bytes), or the event (the others). */
      target: Hex;
      /** A conversion's condition index. */
      conditionIndex: number;
      tokens: number;
      usd: number;
    }
  | { kind: 'v2Resolved'; conditionId: Hex; result: readonly bigint[] }
  | { kind: 'v2Derivable'; rule: 'remainingNo' | 'syntheticYes'; eventId: Hex; conditionId: Hex | null }
  | { kind: 'v2Migration'; v2ConditionId: Hex; legacyConditionId: Hex }
  /** A Router action: names the user (`initiator`) the modules' events of its transaction act for. */
  | { kind: 'v2Router'; initiator: Hex }
  | { kind: 'transfer1155'; operator: Hex; from: Hex; to: Hex; ids: readonly bigint[]; values: readonly bigint[] }
  | { kind: 'transfer20'; from: Hex; to: Hex; value: bigint }
  /** A log of a known event that is not a fill we can use (both asset ids set, nothing filled). */
  | { kind: 'unsupported'; reason: string };

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

const lower = (address: string) => address.toLowerCase() as Hex;

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

function interpret(rule: string, name: string, a: Record<string, unknown>): Decoded {
  const big = (key: string) => a[key] as bigint;
  const hex = (key: string) => (a[key] as string).toLowerCase() as Hex;
  switch (rule) {
    case 'exchangeV1.OrderFilled': {
      const makerAssetId = big('makerAssetId');
      const takerAssetId = big('takerAssetId');
      const making = big('makerAmountFilled');
      const taking = big('takerAmountFilled');
      if ((makerAssetId === 0n) === (takerAssetId === 0n))
        return { kind: 'unsupported', reason: 'V1 fill with both or neither asset id zero' };
      // makerAssetId 0: the order owner pays USDC for takerAssetId; otherwise it gives tokens for USDC.
      const side = makerAssetId === 0n ? 'BUY' : 'SELL';
      return fill(
        'v1',
        a,
        side === 'BUY' ? takerAssetId : makerAssetId,
        side,
        side === 'BUY' ? taking : making,
        side === 'BUY' ? making : taking,
        big('fee'),
        side === 'BUY' ? 'tokens' : 'usd',
      );
    }
    case 'exchangeV2.OrderFilled': {
      const sideCode = Number(a['side']);
      if (sideCode !== 0 && sideCode !== 1) return { kind: 'unsupported', reason: `V2 fill with side ${sideCode}` };
      const side = sideCode === 0 ? 'BUY' : 'SELL';
      const making = big('makerAmountFilled');
      const taking = big('takerAmountFilled');
      return fill(
        'v2',
        a,
        big('tokenId'),
        side,
        side === 'BUY' ? taking : making,
        side === 'BUY' ? making : taking,
        big('fee'),
        'usd',
      );
    }
    case 'exchangeV1.OrdersMatched':
      return { kind: 'ordersMatched' };
    case 'exchangeV1.TokenRegistered':
      return { kind: 'tokenRegistered', token0: big('token0'), token1: big('token1'), conditionId: hex('conditionId') };
    case 'conditionalTokens.PositionSplit':
    case 'conditionalTokens.PositionsMerge': {
      const partition = a['partition'] as readonly bigint[];
      return {
        kind: name === 'PositionSplit' ? 'split' : 'merge',
        source: 'ctf',
        stakeholder: hex('stakeholder'),
        conditionId: hex('conditionId'),
        usd: fromUnits(big('amount')),
        collateral: hex('collateralToken'),
        binaryTopLevel:
          BigInt(a['parentCollectionId'] as string) === 0n &&
          partition.length === 2 &&
          partition[0] === 1n &&
          partition[1] === 2n,
      };
    }
    case 'conditionalTokens.PayoutRedemption':
      return {
        kind: 'redemption',
        source: 'ctf',
        redeemer: hex('redeemer'),
        conditionId: hex('conditionId'),
        usd: fromUnits(big('payout')),
        collateral: hex('collateralToken'),
        topLevel: BigInt(a['parentCollectionId'] as string) === 0n,
        indexSets: a['indexSets'] as readonly bigint[],
        amounts: [],
      };
    case 'conditionalTokens.ConditionResolution':
      return {
        kind: 'resolution',
        conditionId: hex('conditionId'),
        oracle: hex('oracle'),
        questionId: hex('questionId'),
        outcomeSlotCount: Number(big('outcomeSlotCount')),
        payoutNumerators: a['payoutNumerators'] as readonly bigint[],
      };
    case 'conditionalTokens.TransferSingle':
      return {
        kind: 'transfer1155',
        operator: hex('operator'),
        from: hex('from'),
        to: hex('to'),
        ids: [big('id')],
        values: [big('value')],
      };
    case 'conditionalTokens.TransferBatch':
      return {
        kind: 'transfer1155',
        operator: hex('operator'),
        from: hex('from'),
        to: hex('to'),
        ids: a['ids'] as readonly bigint[],
        values: a['values'] as readonly bigint[],
      };
    case 'negRiskAdapter.PositionSplit':
    case 'negRiskAdapter.PositionsMerge':
      return {
        kind: name === 'PositionSplit' ? 'split' : 'merge',
        source: 'negRiskAdapter',
        stakeholder: hex('stakeholder'),
        conditionId: hex('conditionId'),
        usd: fromUnits(big('amount')),
        collateral: null,
        binaryTopLevel: true,
      };
    case 'negRiskAdapter.PositionsConverted':
      return {
        kind: 'converted',
        stakeholder: hex('stakeholder'),
        marketId: hex('marketId'),
        indexSet: big('indexSet'),
        usd: fromUnits(big('amount')),
      };
    case 'negRiskAdapter.PayoutRedemption':
      return {
        kind: 'redemption',
        source: 'negRiskAdapter',
        redeemer: hex('redeemer'),
        conditionId: hex('conditionId'),
        usd: fromUnits(big('payout')),
        collateral: null,
        topLevel: true,
        indexSets: [],
        amounts: (a['amounts'] as readonly bigint[]).map(fromUnits),
      };
    case 'v2Module.PositionsSplit':
      return v2Action(a, 'split', 'conditionId', hex('recipient0'), hex('recipient1'), big('amount'), big('amount'));
    case 'v2Module.PositionsMerged':
      return v2Action(a, 'merge', 'conditionId', hex('recipient'), hex('recipient'), big('amount'), big('amount'));
    case 'v2Module.PositionRedeemed': {
      const redeemed = v2Action(
        a,
        'redeem',
        'positionId',
        hex('recipient'),
        hex('recipient'),
        big('amount'),
        big('payout'),
      );
      // A binary result pays a position 0, 0.5 or 1 per token; anything else cannot be booked to a side.
      if (redemptionPayout(redeemed.tokens, redeemed.usd) === null)
        throw new OutOfDomain(`a redemption of ${redeemed.tokens} tokens paying ${redeemed.usd} is no binary payout`);
      return redeemed;
    }
    case 'v2Module.PositionConverted': {
      const conditionIndex = big('conditionIndex');
      if (conditionIndex > 0xffffn) throw new OutOfDomain(`condition index ${conditionIndex} beyond 16 bits`);
      return {
        ...v2Action(a, 'convert', 'eventId', hex('recipient'), hex('recipient'), big('amount'), 0n),
        conditionIndex: Number(conditionIndex),
      };
    }
    case 'v2Module.HorizontalSplit':
    case 'v2Module.HorizontalMerge': {
      const action = name === 'HorizontalSplit' ? 'horizontalSplit' : 'horizontalMerge';
      return v2Action(a, action, 'eventId', hex('recipient'), hex('recipient'), big('amount'), big('amount'));
    }
    case 'v2Module.ConditionResolved':
      return { kind: 'v2Resolved', conditionId: v2Id(a['conditionId']), result: a['result'] as readonly bigint[] };
    case 'v2Module.RemainingConditionsDerivableAsNo':
      return { kind: 'v2Derivable', rule: 'remainingNo', eventId: v2Id(a['eventId']), conditionId: null };
    case 'v2Module.SyntheticConditionDerivableAsYes':
      return {
        kind: 'v2Derivable',
        rule: 'syntheticYes',
        eventId: v2Id(a['eventId']),
        conditionId: v2Id(a['conditionId']),
      };
    case 'v2Module.MigrationConditionRegistered':
      return {
        kind: 'v2Migration',
        v2ConditionId: v2Id(a['v2ConditionId']),
        legacyConditionId: hex('legacyConditionId'),
      };
    case 'v2Router.RouterPositionSplit':
    case 'v2Router.RouterPositionsMerged':
    case 'v2Router.RouterPositionRedeemed':
    case 'v2Router.RouterHorizontalSplit':
    case 'v2Router.RouterHorizontalMerge':
    case 'v2Router.RouterPositionConverted':
      return { kind: 'v2Router', initiator: hex('initiator') };
    case 'erc20.Transfer':
      return { kind: 'transfer20', from: hex('from'), to: hex('to'), value: big('value') };
    default:
      return { kind: 'unsupported', reason: `no rule for ${rule}` };
  }
}

/** A `bytes31` or `bytes29` id (or a uint256 position id) as the 32-byte id every source names it by. */
function v2Id(value: unknown): Hex {
  return paddedV2Id(typeof value === 'bigint' ? `0x${value.toString(16).padStart(64, '0')}` : (value as string)) as Hex;
}

function v2Action(
  a: Record<string, unknown>,
  action: Extract<Decoded, { kind: 'v2Action' }>['action'],
  targetKey: string,
  recipient: Hex,
  recipient1: Hex,
  tokenUnits: bigint,
  usdUnits: bigint,
): Extract<Decoded, { kind: 'v2Action' }> {
  for (const [what, units] of [
    ['amount', tokenUnits],
    ['payout', usdUnits],
  ] as const)
    if (units > MAX_UNITS)
      throw new OutOfDomain(`${what} ${units.toString()} exceeds what the collateral can represent`);
  return {
    kind: 'v2Action',
    action,
    initiator: lower(a['initiator'] as string),
    recipient,
    recipient1,
    target: v2Id(a[targetKey]),
    conditionIndex: 0,
    tokens: fromUnits(tokenUnits),
    usd: fromUnits(usdUnits),
  };
}

function fill(
  era: 'v1' | 'v2',
  a: Record<string, unknown>,
  tokenId: bigint,
  side: 'BUY' | 'SELL',
  tokenUnits: bigint,
  usdUnits: bigint,
  feeUnits: bigint,
  feeUnit: 'usd' | 'tokens',
): Decoded {
  checkFillDomain(tokenUnits, usdUnits, feeUnits);
  const tokens = fromUnits(tokenUnits);
  const usd = fromUnits(usdUnits);
  const fee = fromUnits(feeUnits);
  const price = usd / tokens;
  return {
    kind: 'orderFilled',
    era,
    orderHash: (a['orderHash'] as string).toLowerCase() as Hex,
    maker: lower(a['maker'] as string),
    taker: lower(a['taker'] as string),
    tokenId,
    side,
    tokens,
    usd,
    price,
    fee,
    feeUnit,
    feeUsd: feeUnit === 'usd' ? fee : fee * price,
  };
}

/**
 * What a fill of the exchange can state: tokens and USD both changed hands (a side of nothing is a price of
 * 0 or of infinity), no amount beyond the collateral there is, and at most one USD per token (a token pays
 * at most one). Compared in base units, so the check is exact.
 */
function checkFillDomain(tokenUnits: bigint, usdUnits: bigint, feeUnits: bigint): void {
  if (tokenUnits === 0n) throw new OutOfDomain('fill of zero tokens');
  if (usdUnits === 0n) throw new OutOfDomain('fill of zero USD (a price of 0)');
  for (const [what, units] of [
    ['tokens', tokenUnits],
    ['USD', usdUnits],
    ['fee', feeUnits],
  ] as const)
    if (units > MAX_UNITS)
      throw new OutOfDomain(`${what} amount ${units.toString()} exceeds what the collateral can represent`);
  if (usdUnits > tokenUnits)
    throw new OutOfDomain(`price above 1: ${usdUnits.toString()} USD units for ${tokenUnits.toString()} token units`);
}
