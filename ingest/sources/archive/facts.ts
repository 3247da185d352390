/**
 * Decoded logs → the events ingest consumes. Pure: the token directory and the contract addresses come in,
 * events (or the reason a log yields none) come out.
 *
 * - A fill's trader is the log's `maker`; the taker's own-order leg (taker = the exchange) is the taker's
 *   fill (role `taker`, carrying the fee); every other leg is a maker fill and also a market-wide print.
 * - A leg or fill whose stakeholder is one of our contracts (an exchange minting or merging for a match, the
 *   NegRiskAdapter acting on the CTF) is left out with a counter: the user it acts for has a log of their own.
 * - A fill of a token no market claims is `pending` until the directory knows the token.
 */
import { exchangeEraAt } from '../../contract/primitives.ts';
import type { EventInputOf } from '../../contract/topics.ts';
import type { DecodedLog } from './decode.ts';
import { NEG_RISK_MAX_QUESTIONS, negRiskConditionIds, orderRegisteredPair } from './positions.ts';
import type { TokenDirectory } from './tokens.ts';

export interface ArchiveContracts {
  exchanges: ReadonlySet<string>;
  negRiskExchanges: ReadonlySet<string>;
  /** Every contract of the protocol: never a trader. */
  all: ReadonlySet<string>;
  collaterals: readonly `0x${string}`[];
  /** The NegRiskAdapter: the oracle of every neg-risk question's condition. */
  negRiskAdapter: `0x${string}`;
  /**
   * Legs before this instant (epoch s) are of the V1 era: the V1 → V2 exchange cut-over, the same one the
   * upstream and the importer date by (`exchangeEraAt`). A leg involves no exchange; a fill carries the era
   * of the exchange that emitted it.
   */
  v2StartTs: number;
}

export type Outcome =
  | ({ kind: 'events' } & Events)
  /** Waits for a market to claim what it names (`token <id>`, or a neg-risk question). */
  | { kind: 'pending'; waitingFor: string }
  | { kind: 'skipped'; reason: SkipReason };

export type SkipReason =
  | 'not_indexed'
  | 'orders_matched'
  | 'contract_trader'
  | 'contract_stakeholder'
  | 'nested_or_non_binary'
  | 'non_binary_condition'
  | 'empty_conversion'
  | 'unknown_collateral'
  | 'unsupported';

/** Orders prints of one market beyond the second: block and log position. */
export const SEQ_PER_BLOCK = 100_000;

interface Events {
  markets: EventInputOf<'markets'>[];
  fills: EventInputOf<'fillsArchive'>[];
  trades: EventInputOf<'trades'>[];
  legs: EventInputOf<'positions'>[];
}

const none = (): Events => ({ markets: [], fills: [], trades: [], legs: [] });

export function factsOf(log: DecodedLog, ts: number, directory: TokenDirectory, contracts: ArchiveContracts): Outcome {
  switch (log.kind) {
    case 'orderFilled': {
      if (contracts.all.has(log.maker)) return { kind: 'skipped', reason: 'contract_trader' };
      const market = directory.lookup(log.tokenId);
      if (!market) return { kind: 'pending', waitingFor: `token ${log.tokenId.toString()}` };
      const ownOrderLeg = log.taker === log.address || contracts.exchanges.has(log.taker);
      const price = Math.min(1, log.price);
      const fill: EventInputOf<'fillsArchive'> = {
        tx_hash: log.txHash,
        log_index: log.logIndex,
        condition_id: market.conditionId,
        token_side: market.tokenSide,
        price,
        size_tokens: log.tokens,
        usd: log.usd,
        ts,
        wallet: log.maker,
        side: log.side,
        role: ownOrderLeg ? 'taker' : 'maker',
        era: log.era,
      };
      if (log.feeUsd > 0) fill.fee_usd = log.feeUsd;
      // One print per maker order matched (the taker's own leg repeats them as one average).
      const trades: EventInputOf<'trades'>[] = ownOrderLeg
        ? []
        : [
            {
              tx_hash: log.txHash,
              log_index: log.logIndex,
              condition_id: market.conditionId,
              token_side: market.tokenSide,
              price,
              size_tokens: log.tokens,
              usd: log.usd,
              ts,
              taker_side: log.side === 'BUY' ? 'SELL' : 'BUY',
              seq: log.blockNumber * SEQ_PER_BLOCK + log.logIndex,
            },
          ];
      return { kind: 'events', markets: [], fills: [fill], trades, legs: [] };
    }
    case 'tokenRegistered': {
      const [a, b] = [log.token0, log.token1];
      const negRisk = contracts.negRiskExchanges.has(log.address);
      // The registry emits each pair in both orders: the second one is already known.
      if (directory.has(log.conditionId, a, b) || directory.has(log.conditionId, b, a))
        return { kind: 'skipped', reason: 'not_indexed' };
      const ordered = orderRegisteredPair(log.token0, log.token1, log.conditionId, contracts.collaterals);
      if (!ordered) return { kind: 'skipped', reason: 'unknown_collateral' };
      const [token1, token2] = [ordered.token1.toString(), ordered.token2.toString()];
      directory.add(log.conditionId, token1, token2, negRisk);
      return {
        kind: 'events',
        ...none(),
        markets: [
          { type: 'tokens', condition_id: log.conditionId, token1_id: token1, token2_id: token2, neg_risk: negRisk },
        ],
      };
    }
    case 'split':
    case 'merge': {
      if (!log.binaryTopLevel) return { kind: 'skipped', reason: 'nested_or_non_binary' };
      if (contracts.all.has(log.stakeholder)) return { kind: 'skipped', reason: 'contract_stakeholder' };
      return {
        kind: 'events',
        ...none(),
        legs: [leg(log, log.stakeholder, log.kind === 'split' ? 'SPLIT' : 'MERGE', log.usd, ts, contracts)],
      };
    }
    case 'redemption': {
      if (!log.topLevel) return { kind: 'skipped', reason: 'nested_or_non_binary' };
      if (contracts.all.has(log.redeemer)) return { kind: 'skipped', reason: 'contract_stakeholder' };
      // The chain reports the USD paid, not which tokens burned: tokens = USD is exact for a winner (1.00
      // each); for a split payout the projection allocates the USD over the holdings.
      return { kind: 'events', ...none(), legs: [leg(log, log.redeemer, 'REDEEM', log.usd, ts, contracts)] };
    }
    case 'resolution': {
      if (log.outcomeSlotCount !== 2 || log.payoutNumerators.length !== 2)
        return { kind: 'skipped', reason: 'non_binary_condition' };
      const [one, two] = log.payoutNumerators as [bigint, bigint];
      // The contract carries numerators as safe integers (real ones are 0 and 1).
      if (one > BigInt(Number.MAX_SAFE_INTEGER) || two > BigInt(Number.MAX_SAFE_INTEGER))
        return { kind: 'skipped', reason: 'unsupported' };
      const winner = one > 0n && two === 0n ? 1 : one === 0n && two > 0n ? 2 : null;
      return {
        kind: 'events',
        ...none(),
        markets: [
          {
            type: 'resolution',
            condition_id: log.conditionId,
            winner_token_side: winner,
            payout_numerators: [Number(one), Number(two)],
            ts,
          },
        ],
      };
    }
    case 'converted':
      return conversionLegs(log, ts, directory, contracts);
    case 'ordersMatched':
      return { kind: 'skipped', reason: 'orders_matched' };
    case 'unsupported':
      return { kind: 'skipped', reason: 'unsupported' };
    case 'transfer1155':
    case 'transfer20':
      return { kind: 'skipped', reason: 'not_indexed' };
  }
}

function leg(
  log: DecodedLog & { conditionId: string },
  wallet: string,
  kind: 'SPLIT' | 'MERGE' | 'REDEEM',
  usd: number,
  ts: number,
  contracts: ArchiveContracts,
): EventInputOf<'positions'> {
  return legOf(log, wallet, log.conditionId, kind, usd, usd, ts, contracts);
}

function legOf(
  log: DecodedLog,
  wallet: string,
  conditionId: string,
  kind: EventInputOf<'positions'>['kind'],
  tokens: number,
  usd: number,
  ts: number,
  contracts: ArchiveContracts,
): EventInputOf<'positions'> {
  return {
    tx_hash: log.txHash,
    log_index: log.logIndex,
    wallet,
    condition_id: conditionId,
    kind,
    tokens,
    usd,
    era: exchangeEraAt(ts, contracts.v2StartTs),
    ts,
  };
}

/**
 * NegRiskAdapter `PositionsConverted(stakeholder, marketId, indexSet, amount)`: the stakeholder gave `amount`
 * NO tokens (token 2) of each question whose bit is set in `indexSet` (k of them), and received `amount` YES
 * tokens (token 1) of every other question of the market, plus (k − 1) × `amount` USDC. The legs:
 * CONVERT_OUT per converted question (its NO tokens out, an equal share of the USDC in) and CONVERT_IN per
 * other question (YES tokens in, nothing paid). The market's questions are those whose condition the token
 * directory knows (question i's condition is keccak256(adapter, marketId with last byte i, 2)); a converted
 * question no market claims yet makes the conversion wait like a fill of an unknown token. The adapter's
 * conversion fee (the market's feeBips, not in the event) is taken as 0.
 */
function conversionLegs(
  log: Extract<DecodedLog, { kind: 'converted' }>,
  ts: number,
  directory: TokenDirectory,
  contracts: ArchiveContracts,
): Outcome {
  if (contracts.all.has(log.stakeholder)) return { kind: 'skipped', reason: 'contract_stakeholder' };
  const conditions = negRiskConditionIds(contracts.negRiskAdapter, log.marketId);
  const converted: number[] = [];
  for (let index = 0; index < NEG_RISK_MAX_QUESTIONS; index++)
    if ((log.indexSet >> BigInt(index)) & 1n) converted.push(index);
  if (converted.length === 0 || log.indexSet >> BigInt(NEG_RISK_MAX_QUESTIONS) !== 0n || log.usd <= 0)
    return { kind: 'skipped', reason: 'empty_conversion' };
  for (const index of converted) {
    const conditionId = conditions[index]!;
    if (!directory.knowsCondition(conditionId))
      return {
        kind: 'pending',
        waitingFor: `neg-risk question ${index} of market ${log.marketId} (condition ${conditionId})`,
      };
  }
  const usdEach = (log.usd * (converted.length - 1)) / converted.length;
  const events = none();
  for (let index = 0; index < NEG_RISK_MAX_QUESTIONS; index++) {
    const conditionId = conditions[index]!;
    const isConverted = ((log.indexSet >> BigInt(index)) & 1n) === 1n;
    if (isConverted)
      events.legs.push(legOf(log, log.stakeholder, conditionId, 'CONVERT_OUT', log.usd, usdEach, ts, contracts));
    else if (directory.knowsCondition(conditionId))
      events.legs.push(legOf(log, log.stakeholder, conditionId, 'CONVERT_IN', log.usd, 0, ts, contracts));
  }
  return { kind: 'events', ...events };
}
