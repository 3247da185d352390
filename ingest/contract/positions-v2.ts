/**
 * Polymarket Protocol V2 position ids (PositionManager ERC-1155 ids): pure functions of the market, read
 * from their bits. Layout, from the most significant bits: moduleId (8) | baseHash (128) | arity (16) |
 * reserved (64) | resolutionChain (16) | conditionIndex (16) | outcomeIndex (8). Facts and sources:
 * ../shared/data/polymarket/onchain/protocol-v2/README.md.
 *
 * Every source names a V2 market by the same condition id: its 31-byte condition id followed by one zero
 * byte, which is how the chain's indexed `bytes31` topics spell it and what the position id of outcome 0 is.
 */
import type { TokenSide } from './primitives.ts';

const OUTCOME_BITS = 8n;
const CONDITION_INDEX_BITS = 16n;
const RESERVED_SHIFT = 8n + 16n + 16n;
const RESERVED_MASK = (1n << 64n) - 1n;
const ARITY_SHIFT = RESERVED_SHIFT + 64n;
const MODULE_SHIFT = 248n;
/** The modules a V2 position can belong to: binary, neg-risk, combinatorial. */
const MODULE_IDS = new Set([1n, 2n, 3n]);
const UINT256 = (1n << 256n) - 1n;

export interface V2Position {
  moduleId: number;
  /** The market: the position id with its outcome byte cleared, as 0x + 64 hex digits. */
  conditionId: string;
  /** 0 = YES (token side 1), 1 = NO (token side 2). */
  outcomeIndex: number;
  tokenSide: TokenSide;
  /** Neg-risk: the number of real conditions of the event (0 for a binary market). */
  arity: number;
  conditionIndex: number;
  /** The event (neg-risk): the condition id with conditionIndex 0, as 0x + 64 hex digits. */
  eventId: string;
}

const word = (value: bigint) => `0x${value.toString(16).padStart(64, '0')}`;

/**
 * The parts of a V2 position id; null when the id is not one (its reserved bits set, or a module id that is
 * none of the protocol's, as the SDK tells them apart), or its outcome is neither YES nor NO.
 */
export function v2Position(id: bigint | string): V2Position | null {
  let value: bigint;
  try {
    value = typeof id === 'bigint' ? id : BigInt(id);
  } catch {
    return null;
  }
  if (value < 0n || value > UINT256) return null;
  if (((value >> RESERVED_SHIFT) & RESERVED_MASK) !== 0n) return null;
  const moduleId = value >> MODULE_SHIFT;
  if (!MODULE_IDS.has(moduleId)) return null;
  const outcomeIndex = Number(value & ((1n << OUTCOME_BITS) - 1n));
  if (outcomeIndex > 1) return null;
  const condition = value & ~((1n << OUTCOME_BITS) - 1n);
  const conditionIndex = Number((value >> OUTCOME_BITS) & ((1n << CONDITION_INDEX_BITS) - 1n));
  return {
    moduleId: Number(moduleId),
    conditionId: word(condition),
    outcomeIndex,
    tokenSide: outcomeIndex === 0 ? 1 : 2,
    arity: Number((value >> ARITY_SHIFT) & 0xffffn),
    conditionIndex,
    eventId: word(condition & ~(((1n << CONDITION_INDEX_BITS) - 1n) << OUTCOME_BITS)),
  };
}

/** The position id of an outcome (0 YES, 1 NO) of a V2 condition id (0x + 64 hex digits, last byte zero). */
export function v2PositionId(conditionId: string, outcomeIndex: 0 | 1): bigint {
  return BigInt(conditionId) | BigInt(outcomeIndex);
}

/** A `bytes31` condition id (0x + 62 hex digits) or `bytes29` event id as the 32-byte id every source uses. */
export function paddedV2Id(id: string): string {
  const hex = id.toLowerCase();
  return hex.length >= 66 ? hex.slice(0, 66) : hex.padEnd(66, '0');
}

/**
 * The condition ids of a neg-risk event: its real conditions 0..arity−1 and the synthetic "Other" at index
 * arity (which exists only when the event names it).
 */
export function v2EventConditions(eventId: string, withOther: boolean): string[] {
  const event = BigInt(paddedV2Id(eventId));
  const arity = Number((event >> ARITY_SHIFT) & 0xffffn);
  const count = withOther ? arity + 1 : arity;
  return Array.from({ length: count }, (_, index) => word(event | (BigInt(index) << OUTCOME_BITS)));
}

/** A condition id as a source spells it, normalized: a V2 `bytes31` id (62 hex digits) gets its zero byte. */
export function normalizedConditionId(id: string): string {
  return /^0x[0-9a-fA-F]{62}$/.test(id) ? `${id.toLowerCase()}00` : id;
}
