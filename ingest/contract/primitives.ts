/**
 * Field-level building blocks of the event contract, and the one price-normalization rule.
 */
import { z } from 'zod';

/** Earliest and latest instants the contract accepts (2017-01-01 .. 2100-01-01), epoch seconds. */
export const EPOCH_MIN = 1_483_228_800;
export const EPOCH_MAX = 4_102_444_800;

/** A 0x wallet, any case on the wire; always lower case once parsed. */
export const walletSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'wallet must be 0x followed by 40 hex digits')
  .toLowerCase();

/** A market id: 0x plus 64 hex digits, lower case once parsed. */
export const conditionIdSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'condition_id must be 0x followed by 64 hex digits')
  .toLowerCase();

export const txHashSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'tx_hash must be 0x followed by 64 hex digits')
  .toLowerCase();

export const logIndexSchema = z
  .number()
  .int()
  .min(0)
  .max(2 ** 31 - 1);

/** Epoch seconds, integer, within a plausible range. */
export const epochSecondsSchema = z.number().int().min(EPOCH_MIN).max(EPOCH_MAX);

/** A probability-like price in [0, 1]. */
export const priceSchema = z.number().min(0).max(1);

/** The price of something that traded: a fill at 0 gave tokens away, above 1 paid more than any payout. */
export const tradedPriceSchema = z.number().gt(0, 'a traded price must be above 0').max(1);

/**
 * The largest amount of a 6-decimal collateral a double holds exactly, in whole units: above all the
 * collateral in existence, so anything larger is a decoding or upstream error, not a trade.
 */
export const MAX_AMOUNT = Number.MAX_SAFE_INTEGER / 1e6;

export const nonNegativeAmountSchema = z.number().finite().min(0).max(MAX_AMOUNT);
export const positiveAmountSchema = z.number().finite().positive().max(MAX_AMOUNT);

export const tradeSideSchema = z.enum(['BUY', 'SELL']);

/** Token 1 is the first outcome (the one whose probability the UP space measures); token 2 the other. */
export const tokenSideSchema = z.union([z.literal(1), z.literal(2)]);
export type TokenSide = z.infer<typeof tokenSideSchema>;

export const exchangeEraSchema = z.enum(['v1', 'v2']);
export type ExchangeEra = z.infer<typeof exchangeEraSchema>;

/**
 * The exchange era of what happened at `ts` (epoch seconds), for whatever names no exchange: a fill from
 * the data API (upstream or imported), which does not say which exchange matched it, and a position leg
 * from any source (a CTF split, merge or redemption involves no exchange). A fill read from the chain
 * carries the era of the exchange that emitted it instead. Polymarket moved all trading from the V1 to
 * the V2 exchanges in a hard cut-over on 2026-04-28 between 11:00 and 11:15 UTC (V1 fills stop inside
 * that window, none after; the V2 exchange, deployed 2026-03-31 at block 84,902,353, carried only a test
 * trickle before): `v2StartTs` is that instant (DEFAULT_EXCHANGE_V2_START_TS in chain.ts, 11:15 UTC: the
 * handful of V2 fills of that quarter hour count as V1, rather than the thousands of V1 fills before
 * 11:15 as V2).
 */
export function exchangeEraAt(ts: number, v2StartTs: number): ExchangeEra {
  return ts < v2StartTs ? 'v1' : 'v2';
}

/** How a source without an exchange to name stamps an era: by time against the cut-over, or one era for all (an import's `--era`). */
export type EraRule = { v2StartTs: number } | { fixed: ExchangeEra };

export function eraOf(rule: EraRule, ts: number): ExchangeEra {
  return 'fixed' in rule ? rule.fixed : exchangeEraAt(ts, rule.v2StartTs);
}

/**
 * Float noise such as `1 - 0.99 = 0.010000000000000009` would turn a real traded level into a value
 * nobody traded; ten decimals are far finer than any venue's tick and remove that noise.
 */
const PRICE_DECIMALS = 1e10;

/**
 * The UP-space price of a trade: the probability of token 1. A token-1 print at `p` is `p`; a token-2
 * print at `p` is `1 - p`.
 */
export function upNormalizedPrice(tokenSide: TokenSide, tokenPrice: number): number {
  const up = tokenSide === 1 ? tokenPrice : 1 - tokenPrice;
  return Math.round(up * PRICE_DECIMALS) / PRICE_DECIMALS;
}

/** Tokens and USDC have 6 decimals on chain: a fill's token amount is a whole number of micro-tokens. */
const MICRO = 1e6;
/** The finest price tick Polymarket trades (0.0001). */
const PRICE_TICKS = 1e4;

/**
 * The id of a fill that the archive and the upstream both compute, so that the same fill read from the
 * chain and from the data API lands as one row of the fills table, whose key is (wallet, condition_id,
 * fill_id): the archive's copy wins there by its source rank. The data API has no log index (its fills
 * carry a synthetic one), so the id is what both sources state of a fill besides the wallet and the
 * market: the transaction, the token side, the wallet's side, the tokens (micro-tokens: the same 6-decimal
 * integer on both) and the price (USD ÷ tokens on both; the data API states it to 10 significant digits)
 * at 4 decimals, the finest tick: two orders of one wallet filled at different levels in one transaction
 * stay two fills, and the sources' rounding differences (about 1e-10) cross a 4-decimal boundary for
 * about one fill in a million. Two fills of one wallet in one transaction that agree on all of these
 * (two identical orders at one level) are one fill here: no data-API row tells them apart either. The
 * transaction hash comes first (the id splits on ':' into it).
 */
export function fillId(fill: {
  tx_hash: string;
  token_side: number;
  side: string;
  size_tokens: number;
  price: number;
}): string {
  return `${fill.tx_hash.toLowerCase()}:${fill.token_side}:${fill.side}:${Math.round(fill.size_tokens * MICRO)}:${Math.round(fill.price * PRICE_TICKS)}`;
}

/**
 * The id of a position leg (SPLIT, MERGE, REDEEM) that the archive and the upstream both compute, as
 * `fillId` does for fills: per wallet and market (the position_legs key), the transaction, the kind and
 * the USD (micro-dollars; the chain's amount or payout, the data API's usdcSize). Tokens are left out: for
 * a redemption the chain states only the payout (the archive's tokens are the USD), the data API the
 * tokens redeemed. The two copies are one row (the table has no source rank: the one landed last is kept;
 * both state the same USD).
 */
export function legId(leg: { tx_hash: string; kind: string; usd: number }): string {
  return `${leg.tx_hash.toLowerCase()}:${leg.kind}:${Math.round(leg.usd * MICRO)}`;
}

/**
 * The id of a market print (the trades table's key within a market and second) that the archive and the
 * upstream both compute, as `fillId` does for fills, so that the same print from both lands once: the
 * transaction, the tokens (micro-tokens) and the UP-space price at 4 decimals. The token side is left
 * out on purpose: a print is the trade, and a match of complementary orders is one trade that the maker's
 * leg states on one token (the archive prints maker legs) and a taker's row on the other (the data API
 * gives the tracked wallet's row, maker or taker), at the same UP price. Two prints of one transaction
 * that agree on all of these (two maker orders of the same size at one level) are one print here: the
 * tape's prices (max/min of levels, the last level of a second) are the same either way.
 */
export function printId(print: { tx_hash: string; token_side: TokenSide; size_tokens: number; price: number }): string {
  return `${print.tx_hash.toLowerCase()}:${Math.round(print.size_tokens * MICRO)}:${Math.round(upNormalizedPrice(print.token_side, print.price) * PRICE_TICKS)}`;
}

/** The payouts per token a binary market's redemption can make: the losing side, a split payout, the winner. */
const REDEMPTION_PAYOUTS = [0, 0.5, 1] as const;
export type RedemptionPayout = (typeof REDEMPTION_PAYOUTS)[number];

/**
 * What a redemption paid per token redeemed (`usd / tokens`), which says the side it redeemed when the
 * source does not name it: 0 the losing side, 1 the winner, 0.5 a split payout (both sides). Amounts have
 * 6 decimals, so a payout is one of these when the USD is within a micro-dollar of it (a split payout's
 * half rounds down), scaled for float noise on large amounts. Null for any other ratio, and for a payout
 * of no tokens; no tokens for no USD (an empty redemption, which real exports hold) is 0.
 */
export function redemptionPayout(tokens: number, usd: number): RedemptionPayout | null {
  const tolerance = 1 / MICRO + Math.max(tokens, usd) * Number.EPSILON * 16;
  if (tokens === 0) return usd <= tolerance ? 0 : null;
  return REDEMPTION_PAYOUTS.find((payout) => Math.abs(usd - payout * tokens) <= tolerance) ?? null;
}
