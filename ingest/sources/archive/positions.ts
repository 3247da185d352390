/**
 * ConditionalTokens position ids: which ERC-1155 token is outcome 0 (token 1, the UP side) of a condition.
 *
 * `TokenRegistered` names the two tokens of a condition but not which is which (the registry emits the pair
 * in both orders), so the archive recomputes the position id of outcome 0 — `keccak256(collateral,
 * collectionId(conditionId, indexSet 1))`, with the collection id on the alt_bn128 curve as the CTF's
 * CTHelpers computes it — and matches it against the pair.
 */
import { encodePacked, hexToBigInt, keccak256, toHex, type Hex } from 'viem';

/** alt_bn128 base field modulus (P ≡ 3 mod 4, so a square root is one exponentiation). */
const P = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47n;
const CURVE_B = 3n;
const SQRT_EXPONENT = (P + 1n) / 4n;

function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n;
  let b = base % modulus;
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % modulus;
    b = (b * b) % modulus;
    e >>= 1n;
  }
  return result;
}

/** CTHelpers.getCollectionId with a zero parent collection. */
function collectionId(conditionId: Hex, indexSet: bigint): bigint {
  let x = hexToBigInt(keccak256(encodePacked(['bytes32', 'uint256'], [conditionId, indexSet])));
  const odd = x >> 255n !== 0n;
  let y: bigint;
  let yy: bigint;
  do {
    x = (x + 1n) % P;
    yy = (((x * x) % P) * x + CURVE_B) % P;
    y = modPow(yy, SQRT_EXPONENT, P);
  } while ((y * y) % P !== yy);
  if ((odd && y % 2n === 0n) || (!odd && y % 2n === 1n)) y = P - y;
  if (y % 2n === 1n) x ^= 1n << 254n;
  return x;
}

/** The ERC-1155 id of the position `indexSet` (1 = outcome 0, 2 = outcome 1) of a condition. */
export function positionId(collateral: Hex, conditionId: Hex, indexSet: bigint): bigint {
  return positionIdOf(collateral, collectionId(conditionId, indexSet));
}

function positionIdOf(collateral: Hex, collection: bigint): bigint {
  return hexToBigInt(keccak256(encodePacked(['address', 'bytes32'], [collateral, toHex(collection, { size: 32 })])));
}

export interface OrderedTokens {
  token1: bigint;
  token2: bigint;
  /** The collateral whose position ids matched. */
  collateral: Hex;
}

/**
 * Orders a registered pair as (outcome 0, outcome 1) by trying each collateral; null when none of them
 * gives either id (a collateral we do not know).
 */
export function orderRegisteredPair(
  a: bigint,
  b: bigint,
  conditionId: Hex,
  collaterals: readonly Hex[],
): OrderedTokens | null {
  // The collection id (a square root on the curve) does not depend on the collateral: computed once.
  const collection = collectionId(conditionId, 1n);
  for (const collateral of collaterals) {
    const outcome0 = positionIdOf(collateral, collection);
    if (outcome0 === a) return { token1: a, token2: b, collateral };
    if (outcome0 === b) return { token1: b, token2: a, collateral };
  }
  return null;
}

/**
 * The NegRiskAdapter prepares each question of a neg-risk market as a binary CTF condition with itself as
 * the oracle: question `index` of market `marketId` has question id = the market id with its last byte set
 * to the index, and condition id = keccak256(adapter, questionId, 2) (CTF `getConditionId`). Checked
 * against Gamma's questionID/conditionId pairs in the unit tests.
 */
export function negRiskConditionId(adapter: Hex, marketId: Hex, index: number): Hex {
  const questionId = `${marketId.slice(0, 64)}${index.toString(16).padStart(2, '0')}` as Hex;
  return keccak256(encodePacked(['address', 'bytes32', 'uint256'], [adapter, questionId, 2n]));
}

/** A neg-risk market has at most 256 questions (the index is the question id's last byte). */
export const NEG_RISK_MAX_QUESTIONS = 256;

const conditionsByMarket = new Map<string, readonly Hex[]>();

/** The condition ids of questions 0..255 of a neg-risk market (computed once per market). */
export function negRiskConditionIds(adapter: Hex, marketId: Hex): readonly Hex[] {
  const key = `${adapter}:${marketId}`;
  let ids = conditionsByMarket.get(key);
  if (!ids) {
    if (conditionsByMarket.size >= 10_000) conditionsByMarket.clear();
    ids = Array.from({ length: NEG_RISK_MAX_QUESTIONS }, (_, index) => negRiskConditionId(adapter, marketId, index));
    conditionsByMarket.set(key, ids);
  }
  return ids;
}
