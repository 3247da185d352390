/**
 * One row of a Polymarket data-API export → the events it becomes. Pure: no I/O, never throws; a row
 * is a fill (TRADE), a position leg (MERGE / SPLIT / REDEEM), skipped (a valid activity that moves no
 * position: REWARD, MAKER_REBATE, …) or rejected with the contract schema's reason.
 *
 * Rows come from CSV (every value a string) and from JSON (numbers as numbers); both are read through
 * the same lenient accessors so that the same trade gets the same identity whatever file it came from.
 */
import { normalizedConditionId, v2Position } from '../../contract/positions-v2.ts';
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { TOPICS, type EventOf, type TopicId } from '../../contract/topics.ts';
import {
  EPOCH_MAX,
  EPOCH_MIN,
  eraOf,
  redemptionPayout,
  type EraRule,
  type TokenSide,
} from '../../contract/primitives.ts';
import type { FillEvent, PositionLegEvent, TradeEvent } from '../../contract/events.ts';
import { describeZodError } from '../../decode.ts';
import { InvalidEventError } from '../../publisher.ts';

/** What a row says about its market; the catalog (markets.ts) folds these into one metadata event. */
export interface MarketSighting {
  conditionId: string;
  title: string;
  slug: string;
  icon: string;
  ts: number;
  /** The outcome this row traded (TRADE rows only; legs name no outcome). */
  outcome?: { tokenSide: TokenSide; name: string };
}

export type ParsedRow =
  | { kind: 'fill'; fill: FillEvent; trade: TradeEvent; market: MarketSighting; key: string }
  | { kind: 'leg'; leg: PositionLegEvent; market: MarketSighting; key: string }
  | { kind: 'skipped'; reason: string }
  /** `rule`: what the row broke, without its values (the import counts rejections by it); the reason when absent. */
  | { kind: 'rejected'; reason: string; rule?: string };

const LEG_KINDS = ['SPLIT', 'MERGE', 'REDEEM'] as const;
type LegKind = (typeof LEG_KINDS)[number];

/** The contract caps display names at 200 characters; a long name is cosmetic, not a reason to drop a fill. */
const MAX_NAME_LENGTH = 200;

/** USDC has 6 decimals: a computed `size × price` is rounded there so float noise does not leak into usd. */
const USD_DECIMALS = 1e6;

const LOG_INDEX_BITS = 31;
/** seq < 2^16 = 65,536: below every chain print's seq (block × 100,000 + log index, block ≥ 1). */
const SEQ_BITS = 16;

// ---------------------------------------------------------------------------------------------------
// Lenient accessors: CSV gives strings, JSON gives numbers; anything else reads as missing.

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return '';
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * A number, or NaN when the value is not a plain decimal. `Number('')` is 0 and `Number('0x1f')` is 31:
 * both would turn a broken cell into a plausible value, so strings must look like decimals. NaN then
 * fails the schema with its own reason.
 */
export function numberOf(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    const trimmed = value.trim();
    return DECIMAL.test(trimmed) ? Number(trimmed) : Number.NaN;
  }
  return Number.NaN;
}

// ---------------------------------------------------------------------------------------------------
// Identity: the data API has the transaction hash but no log index.

export interface RowDigest {
  /** Synthetic log index: deterministic, 0 .. 2^31 − 1. */
  logIndex: number;
  /** Compact key of the row's identity (120 bits), for deduplication across the files of an import. */
  key: string;
}

/** Hashes a row identity into its synthetic log index and its deduplication key. */
export function digestIdentity(identity: string): RowDigest {
  const digest = createHash('sha256').update(identity).digest();
  return {
    logIndex: digest.readUInt32BE(0) >>> (32 - LOG_INDEX_BITS),
    key: digest.toString('base64', 4, 19),
  };
}

export function syntheticLogIndex(identity: string): number {
  return digestIdentity(identity).logIndex;
}

/**
 * The identity of a fill: who, which transaction, which token, which way, how much, at what price,
 * when. usd is left out on purpose: the `/trades` export has none (we compute size × price) while
 * `/activity` has usdcSize, and the same fill read from both must get the same id. Two fills of one
 * wallet in one transaction that agree on all of these cannot be told apart by any export, and are
 * one fill here. Two different fills of a wallet and transaction collide on the 31-bit index with
 * probability 2^-31 per pair.
 */
function fillIdentity(fill: {
  wallet: string;
  txHash: string;
  conditionId: string;
  tokenSide: number;
  side: string;
  size: number;
  price: number;
  ts: number;
}): string {
  return [
    'fill',
    fill.wallet.toLowerCase(),
    fill.txHash.toLowerCase(),
    fill.conditionId.toLowerCase(),
    fill.tokenSide,
    fill.side,
    fill.size,
    fill.price,
    fill.ts,
  ].join('|');
}

function legIdentity(leg: {
  kind: string;
  wallet: string;
  txHash: string;
  conditionId: string;
  tokens: number;
  usd: number;
  ts: number;
}): string {
  return [
    'leg',
    leg.kind,
    leg.wallet.toLowerCase(),
    leg.txHash.toLowerCase(),
    leg.conditionId.toLowerCase(),
    leg.tokens,
    leg.usd,
    leg.ts,
  ].join('|');
}

/**
 * Orders prints within a market and second (the trades table and the tape order by (ts, seq); the
 * second comes first, so seq only orders within it, arbitrarily: exports carry no log position). The
 * top 16 bits of the synthetic log index: always below 65,536, hence below the seq of any print read from
 * the chain (block × 100,000 + log index), so that where the archive has prints in a second its order
 * decides the second's last trade, and its copy of a print shared with the upstream is the one kept.
 */
export function tradeSeq(logIndex: number): number {
  return logIndex >>> (LOG_INDEX_BITS - SEQ_BITS);
}

// ---------------------------------------------------------------------------------------------------
// Validation through the topic schema, so that reasons are the contract's own.

type Validation<T extends TopicId> = { ok: true; event: EventOf<T> } | { ok: false; reason: string };

export function validateEvent<T extends TopicId>(topicId: T, candidate: unknown): Validation<T> {
  // The registry maps each id to its own schema; indexing by a generic id loses that link, hence the cast.
  const schema = TOPICS[topicId].schema as unknown as z.ZodType<EventOf<T>>;
  const parsed = schema.safeParse(candidate);
  if (parsed.success) return { ok: true, event: parsed.data };
  return { ok: false, reason: new InvalidEventError(topicId, describeZodError(parsed.error)).message };
}

// ---------------------------------------------------------------------------------------------------

/**
 * The data API's v2 answers (`{data, pagination}`) name the same fields in snake_case
 * (`proxy_wallet`, `condition_id`, `transaction_hash`, `outcome_index`, `usdc_size`, `token_id`, …).
 * Rows are read in the v1 (camelCase) spelling; a v2 row is renamed first. A field present in both
 * spellings keeps its camelCase value.
 */
const V2_FIELD_NAMES: Readonly<Record<string, string>> = {
  proxy_wallet: 'proxyWallet',
  condition_id: 'conditionId',
  transaction_hash: 'transactionHash',
  outcome_index: 'outcomeIndex',
  usdc_size: 'usdcSize',
  token_id: 'asset',
  event_slug: 'eventSlug',
  profile_image: 'profileImage',
  profile_image_optimized: 'profileImageOptimized',
};

function canonicalRow(row: Record<string, unknown>): Record<string, unknown> {
  let renamed = row;
  if (Object.keys(row).some((key) => key in V2_FIELD_NAMES)) {
    renamed = {};
    for (const [key, value] of Object.entries(row)) {
      const name = V2_FIELD_NAMES[key] ?? key;
      if (!(name in renamed) || name === key) renamed[name] = value;
    }
  }
  return withV2Market(renamed);
}

/**
 * A Protocol V2 market's row names its market as every source does (positions-v2.ts): a 31-byte condition id
 * gets its zero byte, and a row whose asset is a V2 position id and which names no market (or no outcome)
 * takes them from the id's bits.
 */
function withV2Market(row: Record<string, unknown>): Record<string, unknown> {
  const conditionId = textOf(row.conditionId);
  const normalized = normalizedConditionId(conditionId);
  const position = conditionId === '' || row.outcomeIndex === undefined ? v2Position(textOf(row.asset)) : null;
  if (normalized === conditionId && position === null) return row;
  const out: Record<string, unknown> = { ...row, conditionId: normalized };
  if (position !== null) {
    if (conditionId === '') out.conditionId = position.conditionId;
    if (row.outcomeIndex === undefined && out.conditionId === position.conditionId)
      out.outcomeIndex = position.outcomeIndex;
  }
  return out;
}

/** Rows of `/activity` and `/trades` exports carry a transaction hash; positions, leaderboards and Gamma objects do not. */
export function looksLikeExportRow(row: unknown): boolean {
  return isRecord(row) && ('transactionHash' in row || 'transaction_hash' in row);
}

/** Fees are charged in whole 1e-5 USDC (floored); a smaller difference between usdcSize and size × price is float noise. */
const FEE_QUANTUM = 1e-5;

/**
 * USD of a TRADE row: `/activity` states usdcSize. Since the exchange charges taker fees, usdcSize
 * includes the fee (a buyer's usdcSize is size × price plus the fee: the fixture
 * `polyprinter_activity_sample.json` shows it to the cent). When usdcSize and size × price differ by at
 * least a fee quantum, the fill's usd is the notional size × price (to the micro-dollar, as USDC counts)
 * and the difference is its `fee_usd` (either sign: a seller's proceeds are net of the fee). Otherwise
 * usdcSize is the notional itself and no fee is stated.
 */
function splitUsdcSize(size: number, price: number, usdcSize: number): { usd: number; feeUsd?: number } {
  const notional = size * price;
  if (!Number.isFinite(usdcSize) || !Number.isFinite(notional) || Math.abs(usdcSize - notional) < FEE_QUANTUM / 2)
    return { usd: usdcSize };
  return {
    usd: Math.round(notional * USD_DECIMALS) / USD_DECIMALS,
    feeUsd: Math.round(Math.abs(usdcSize - notional) * USD_DECIMALS) / USD_DECIMALS,
  };
}

/** Why an object that is not an export row was not imported, with a guess at what it is. */
export function describeNonExportRow(row: unknown): string {
  if (!isRecord(row)) return 'not a JSON object';
  const keys = Object.keys(row);
  const guess =
    'avgPrice' in row || 'curPrice' in row
      ? 'they look like /positions or /closed-positions rows'
      : 'rank' in row || 'amount' in row || ('pnl' in row && 'vol' in row)
        ? 'they look like leaderboard rows'
        : 'question' in row
          ? 'they look like Gamma markets'
          : 'event_type' in row
            ? 'they look like CLOB websocket messages'
            : `keys: ${keys.slice(0, 6).join(', ')}${keys.length > 6 ? ', …' : ''}`;
  return `rows have no transactionHash, so they are not /activity or /trades rows (${guess})`;
}

function tokenSideOf(outcomeIndex: unknown): TokenSide | undefined {
  const index = numberOf(outcomeIndex);
  if (index === 0) return 1;
  if (index === 1) return 2;
  return undefined;
}

function sightingOf(row: Record<string, unknown>, conditionId: string, ts: number): MarketSighting {
  return { conditionId, title: textOf(row.title), slug: textOf(row.slug), icon: textOf(row.icon), ts };
}

/** The trader's display name: `name`, else `pseudonym`; the data API fills `name` with the wallet when unset. */
function displayNameOf(row: Record<string, unknown>): string | undefined {
  const name = textOf(row.name) || textOf(row.pseudonym);
  return name === '' ? undefined : name.slice(0, MAX_NAME_LENGTH);
}

const PRICE_ABOVE_ZERO = 'a fill must have a price above 0';
const REDEMPTION_PAYS = 'a redemption must pay 0, 0.5 or 1 per token';

function parseTradeRow(row: Record<string, unknown>, era: EraRule, usdFromSize: boolean): ParsedRow {
  const tokenSide = tokenSideOf(row.outcomeIndex);
  if (tokenSide === undefined) {
    return {
      kind: 'rejected',
      rule: 'outcomeIndex must be 0 or 1 on a trade',
      reason: `outcomeIndex must be 0 or 1 on a trade (got ${JSON.stringify(row.outcomeIndex ?? null)})`,
    };
  }
  const wallet = textOf(row.proxyWallet);
  const txHash = textOf(row.transactionHash);
  const conditionId = textOf(row.conditionId);
  const side = textOf(row.side).toUpperCase();
  const size = numberOf(row.size);
  const price = numberOf(row.price);
  const ts = numberOf(row.timestamp);
  // Rows priced 0 come from scrapes that rounded their figures (usdcSize 0): said with those figures.
  if (price <= 0) {
    const paid = usdFromSize ? '' : `usdcSize ${textOf(row.usdcSize) || 'missing'} for `;
    return {
      kind: 'rejected',
      rule: PRICE_ABOVE_ZERO,
      reason: `price ${textOf(row.price)} (${paid}size ${textOf(row.size) || 'missing'}): ${PRICE_ABOVE_ZERO}`,
    };
  }
  // `/trades` rows have no usdcSize: what changed hands is the tokens times the price paid.
  const { usd, feeUsd } = usdFromSize
    ? { usd: Math.round(size * price * USD_DECIMALS) / USD_DECIMALS, feeUsd: undefined }
    : splitUsdcSize(size, price, numberOf(row.usdcSize));
  const { logIndex, key } = digestIdentity(
    fillIdentity({ wallet, txHash, conditionId, tokenSide, side, size, price, ts }),
  );

  const fill = validateEvent('fillsUpstream', {
    tx_hash: txHash,
    log_index: logIndex,
    wallet,
    condition_id: conditionId,
    side,
    token_side: tokenSide,
    price,
    size_tokens: size,
    usd,
    // Exports do not say whether the wallet made or took the liquidity; taker is the conservative default.
    role: 'taker',
    era: eraOf(era, ts),
    ts,
    name: displayNameOf(row),
    ...(feeUsd === undefined ? {} : { fee_usd: feeUsd }),
  });
  if (!fill.ok) return { kind: 'rejected', reason: fill.reason };

  const trade = validateEvent('trades', {
    tx_hash: fill.event.tx_hash,
    log_index: logIndex,
    condition_id: fill.event.condition_id,
    token_side: tokenSide,
    price: fill.event.price,
    size_tokens: fill.event.size_tokens,
    usd: fill.event.usd,
    // The row's side is the wallet's, and the wallet may have been the maker: the taker's side is unknown.
    ts: fill.event.ts,
    seq: tradeSeq(logIndex),
  });
  if (!trade.ok) return { kind: 'rejected', reason: trade.reason };

  const market = sightingOf(row, fill.event.condition_id, fill.event.ts);
  const outcomeName = textOf(row.outcome);
  if (outcomeName !== '') market.outcome = { tokenSide, name: outcomeName };
  return { kind: 'fill', fill: fill.event, trade: trade.event, market, key };
}

function parseLegRow(row: Record<string, unknown>, kind: LegKind, era: EraRule): ParsedRow {
  const wallet = textOf(row.proxyWallet);
  const txHash = textOf(row.transactionHash);
  const conditionId = textOf(row.conditionId);
  const tokens = numberOf(row.size);
  const usd = numberOf(row.usdcSize);
  const ts = numberOf(row.timestamp);
  const { logIndex, key } = digestIdentity(legIdentity({ kind, wallet, txHash, conditionId, tokens, usd, ts }));
  const leg = validateEvent('positions', {
    tx_hash: txHash,
    log_index: logIndex,
    wallet,
    condition_id: conditionId,
    kind,
    tokens,
    usd,
    era: eraOf(era, ts),
    ts,
  });
  if (!leg.ok) {
    const unreadablePayout = kind === 'REDEEM' && redemptionPayout(tokens, usd) === null;
    return { kind: 'rejected', reason: leg.reason, ...(unreadablePayout ? { rule: REDEMPTION_PAYS } : {}) };
  }
  return { kind: 'leg', leg: leg.event, market: sightingOf(row, leg.event.condition_id, leg.event.ts), key };
}

const CONDITION_ID = /^0x[0-9a-fA-F]{64}$/;

function isLegKind(type: string): type is LegKind {
  return (LEG_KINDS as readonly string[]).includes(type);
}

/**
 * What a fill or leg row says about its market, read without validating the rest of the row (no hash,
 * no schema): the importer's first pass only gathers market facts, and only markets that end up with an
 * imported row get metadata. A row rejected later for, say, its price still names its market truly.
 */
export function marketSightingOf(input: unknown): MarketSighting | undefined {
  if (!isRecord(input)) return undefined;
  const row = canonicalRow(input);
  const type = row.type === undefined ? 'TRADE' : textOf(row.type).toUpperCase();
  if (type !== 'TRADE' && !isLegKind(type)) return undefined;
  const conditionId = textOf(row.conditionId);
  const ts = numberOf(row.timestamp);
  if (!CONDITION_ID.test(conditionId) || !Number.isInteger(ts) || ts < EPOCH_MIN || ts > EPOCH_MAX) return undefined;
  const sighting = sightingOf(row, conditionId.toLowerCase(), ts);
  const tokenSide = type === 'TRADE' ? tokenSideOf(row.outcomeIndex) : undefined;
  const outcomeName = textOf(row.outcome);
  if (tokenSide !== undefined && outcomeName !== '') sighting.outcome = { tokenSide, name: outcomeName };
  return sighting;
}

/**
 * Maps one export row (v1 camelCase or v2 snake_case). `/activity` rows carry a `type`; `/trades` rows
 * have no `type` (and no usdcSize) and are all trades. The upstream poller maps the rows it fetches with
 * this same function. The era: by the row's time against the cut-over (`{v2StartTs}`, what the poller and
 * the importer do by default), or one for all (`{fixed}`, an import's `--era`). A time that is not a
 * number stamps v2 here and is rejected by the schema anyway.
 */
export function parseExportRow(input: unknown, era: EraRule): ParsedRow {
  if (!isRecord(input)) return { kind: 'rejected', reason: 'row is not an object' };
  const row = canonicalRow(input);
  if (row.type === undefined) return parseTradeRow(row, era, true);
  const type = textOf(row.type).toUpperCase();
  if (type === '') return { kind: 'rejected', reason: 'type is empty (expected TRADE, MERGE, SPLIT, REDEEM, …)' };
  if (type === 'TRADE') return parseTradeRow(row, era, false);
  if (isLegKind(type)) return parseLegRow(row, type, era);
  return { kind: 'skipped', reason: `activity type ${type.slice(0, 40)} is neither a fill nor a position leg` };
}
