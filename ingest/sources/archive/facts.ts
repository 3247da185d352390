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
import { v2EventConditions, v2Position, v2PositionId } from '../../contract/positions-v2.ts';
import type { DecodedLog } from './decode.ts';
import { NEG_RISK_MAX_QUESTIONS, negRiskConditionIds, orderRegisteredPair } from './positions.ts';
import type { TokenDirectory, TokenMarket } from './tokens.ts';

export interface ArchiveContracts {
  exchanges: ReadonlySet<string>;
  /** Protocol V2's ExchangeV3: its fills name PositionManager position ids, not CTF token ids. */
  exchangesV3: ReadonlySet<string>;
  /**
   * Contracts that act for one user in a transaction (the pUSD collateral adapters, Protocol V2's Router):
   * a leg whose stakeholder is one of them belongs to that transaction's principal when it has exactly one.
   */
  intermediaries: ReadonlySet<string>;
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
  | 'not_a_v2_position'
  | 'split_between_wallets'
  | 'unsupported';

/** Orders prints of one market beyond the second: block and log position. */
export const SEQ_PER_BLOCK = 100_000;

interface Events {
  markets: EventInputOf<'markets'>[];
  fills: EventInputOf<'fillsArchive'>[];
  trades: EventInputOf<'trades'>[];
  legs: EventInputOf<'positions'>[];
  /**
   * Neg-risk conditions a derived result resolves NO unless already resolved (the archive checks the store
   * and the batch before it publishes their resolutions).
   */
  derivedNo?: { conditionIds: string[]; ts: number };
}

const none = (): Events => ({ markets: [], fills: [], trades: [], legs: [] });

/** The full payout of a Protocol V2 result vector. */
const V2_RESULT_TOTAL = 1_000_000n;

/**
 * `principal`: the one user the log's transaction acts for, as the archive tells it from the transaction's
 * other logs (an intermediary's ERC-1155 transfers, a Router event's initiator); undefined when none or several.
 */
export function factsOf(
  log: DecodedLog,
  ts: number,
  directory: TokenDirectory,
  contracts: ArchiveContracts,
  principal?: string,
): Outcome {
  switch (log.kind) {
    case 'orderFilled': {
      if (contracts.all.has(log.maker)) return { kind: 'skipped', reason: 'contract_trader' };
      const v3 = contracts.exchangesV3.has(log.address);
      const market = v3 ? v2MarketOf(log.tokenId, directory) : directory.lookup(log.tokenId);
      if (market === null) return { kind: 'skipped', reason: 'not_a_v2_position' };
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
      const holder = holderIn(log.stakeholder, contracts, principal);
      if (holder === undefined) return { kind: 'skipped', reason: 'contract_stakeholder' };
      return {
        kind: 'events',
        ...none(),
        legs: [leg(log, holder, log.kind === 'split' ? 'SPLIT' : 'MERGE', log.usd, ts, contracts)],
      };
    }
    case 'redemption': {
      if (!log.topLevel) return { kind: 'skipped', reason: 'nested_or_non_binary' };
      const holder = holderIn(log.redeemer, contracts, principal);
      if (holder === undefined) return { kind: 'skipped', reason: 'contract_stakeholder' };
      // The chain reports the USD paid, not which tokens burned: tokens = USD is exact for a winner (1.00
      // each); for a split payout the projection allocates the USD over the holdings.
      return { kind: 'events', ...none(), legs: [leg(log, holder, 'REDEEM', log.usd, ts, contracts)] };
    }
    case 'resolution': {
      if (log.outcomeSlotCount !== 2 || log.payoutNumerators.length !== 2)
        return { kind: 'skipped', reason: 'non_binary_condition' };
      const [one, two] = log.payoutNumerators as [bigint, bigint];
      // The contract carries numerators as safe integers (real ones are 0 and 1).
      if (one > BigInt(Number.MAX_SAFE_INTEGER) || two > BigInt(Number.MAX_SAFE_INTEGER))
        return { kind: 'skipped', reason: 'unsupported' };
      const winner = winnerOf(one, two);
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
            source: 'chain',
          },
        ],
      };
    }
    case 'converted': {
      const holder = holderIn(log.stakeholder, contracts, principal);
      if (holder === undefined) return { kind: 'skipped', reason: 'contract_stakeholder' };
      return conversionLegs(log, holder, ts, directory, contracts);
    }
    case 'v2Action':
      return v2ActionLegs(log, ts, directory, contracts, principal);
    case 'v2Resolved': {
      if (log.result.length !== 2) return { kind: 'skipped', reason: 'non_binary_condition' };
      const [one, two] = log.result as [bigint, bigint];
      if (one + two !== V2_RESULT_TOTAL) return { kind: 'skipped', reason: 'unsupported' };
      return { kind: 'events', ...none(), markets: [v2Resolution(directory, log.conditionId, one, two, ts)] };
    }
    case 'v2Derivable':
      if (log.rule === 'syntheticYes' && log.conditionId !== null)
        return {
          kind: 'events',
          ...none(),
          markets: [v2Resolution(directory, log.conditionId, V2_RESULT_TOTAL, 0n, ts)],
        };
      // Every condition of the event (the synthetic one included) not already resolved YES resolves NO.
      return {
        kind: 'events',
        ...none(),
        derivedNo: {
          conditionIds: v2EventConditions(log.eventId, true).map((id) => directory.v2ConditionOf(id)),
          ts,
        },
      };
    case 'v2Migration': {
      const v2ConditionId = log.v2ConditionId;
      if (directory.v2ConditionOf(v2ConditionId) === log.legacyConditionId)
        return { kind: 'skipped', reason: 'not_indexed' };
      directory.addMigration(v2ConditionId, log.legacyConditionId);
      return {
        kind: 'events',
        ...none(),
        markets: [{ type: 'migration', condition_id: log.legacyConditionId, v2_condition_id: v2ConditionId }],
      };
    }
    case 'v2Router':
      return { kind: 'skipped', reason: 'not_indexed' };
    case 'ordersMatched':
      return { kind: 'skipped', reason: 'orders_matched' };
    case 'unsupported':
      return { kind: 'skipped', reason: 'unsupported' };
    case 'transfer1155':
    case 'transfer20':
      return { kind: 'skipped', reason: 'not_indexed' };
  }
}

/** The winning token of a binary payout vector: the one side paid while the other is not; null for a split. */
function winnerOf(one: bigint, two: bigint): 1 | 2 | null {
  return one > 0n && two === 0n ? 1 : one === 0n && two > 0n ? 2 : null;
}

/** Whom a leg belongs to: the stakeholder, or the principal of an intermediary's transaction; never a contract. */
function holderIn(stakeholder: string, contracts: ArchiveContracts, principal: string | undefined): string | undefined {
  if (!contracts.all.has(stakeholder)) return stakeholder;
  return contracts.intermediaries.has(stakeholder) ? principal : undefined;
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
  holder: string,
  ts: number,
  directory: TokenDirectory,
  contracts: ArchiveContracts,
): Outcome {
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
    if (isConverted) events.legs.push(legOf(log, holder, conditionId, 'CONVERT_OUT', log.usd, usdEach, ts, contracts));
    else if (directory.knowsCondition(conditionId))
      events.legs.push(legOf(log, holder, conditionId, 'CONVERT_IN', log.usd, 0, ts, contracts));
  }
  return { kind: 'events', ...events };
}

/**
 * The market of a V2 position: Gamma's `positionIds` or a migration's link when a source named them (a
 * migrated market keeps its legacy condition id), else the id's own bits. Null: not a V2 position id.
 */
function v2MarketOf(positionId: bigint, directory: TokenDirectory): TokenMarket | null {
  const named = directory.lookup(positionId);
  if (named) return named;
  const position = v2Position(positionId);
  if (position === null) return null;
  return {
    conditionId: directory.v2ConditionOf(position.conditionId),
    tokenSide: position.tokenSide,
    negRisk: position.moduleId === 2,
  };
}

function v2Resolution(
  directory: TokenDirectory,
  conditionId: string,
  one: bigint,
  two: bigint,
  ts: number,
): EventInputOf<'markets'> {
  return {
    type: 'resolution',
    condition_id: directory.v2ConditionOf(conditionId),
    winner_token_side: winnerOf(one, two),
    payout_numerators: [Number(one), Number(two)],
    ts,
    source: 'chain',
  };
}

/**
 * A V2 module's action as legs of its holder: the recipient when it is a user, else the principal of an
 * intermediary's transaction (the Router, a collateral adapter). A match's own mint or merge (initiated by
 * an exchange) is the fills' already.
 *
 * - split: SPLIT of `amount` (one collateral per pair); merge: MERGE; redeem: REDEEM of the position's
 *   `amount` for its `payout` (the payout per token says the side, as for every redemption);
 * - convert (neg-risk): NO of condition i out (CONVERT_OUT, no collateral: one NO is worth exactly one YES
 *   of each other condition), YES of every other condition of the event in (CONVERT_IN);
 * - horizontal split or merge: one YES of every condition of the event for one collateral, the collateral
 *   spread evenly over the conditions.
 * An event's conditions are its real ones (the arity in the id) and the synthetic "Other" when a source
 * named its positions (Gamma).
 */
function v2ActionLegs(
  log: Extract<DecodedLog, { kind: 'v2Action' }>,
  ts: number,
  directory: TokenDirectory,
  contracts: ArchiveContracts,
  principal: string | undefined,
): Outcome {
  if (contracts.exchanges.has(log.initiator)) return { kind: 'skipped', reason: 'contract_stakeholder' };
  if (log.action === 'split' && log.recipient1 !== log.recipient)
    return { kind: 'skipped', reason: 'split_between_wallets' };
  const holder = holderIn(log.recipient, contracts, principal);
  if (holder === undefined) return { kind: 'skipped', reason: 'contract_stakeholder' };
  const one = (conditionId: string, kind: EventInputOf<'positions'>['kind'], tokens: number, usd: number) => ({
    kind: 'events' as const,
    ...none(),
    legs: [legOf(log, holder, conditionId, kind, tokens, usd, ts, contracts)],
  });
  switch (log.action) {
    case 'split':
      return one(directory.v2ConditionOf(log.target), 'SPLIT', log.tokens, log.usd);
    case 'merge':
      return one(directory.v2ConditionOf(log.target), 'MERGE', log.tokens, log.usd);
    case 'redeem': {
      const position = v2Position(BigInt(log.target));
      if (position === null) return { kind: 'skipped', reason: 'not_a_v2_position' };
      return one(directory.v2ConditionOf(position.conditionId), 'REDEEM', log.tokens, log.usd);
    }
    case 'convert':
    case 'horizontalSplit':
    case 'horizontalMerge': {
      const conditions = eventConditions(log.target, directory);
      if (log.action === 'convert' && log.conditionIndex >= conditions.length)
        return { kind: 'skipped', reason: 'empty_conversion' };
      const events = none();
      conditions.forEach((conditionId, index) => {
        const legKind =
          log.action === 'convert'
            ? index === log.conditionIndex
              ? 'CONVERT_OUT'
              : 'CONVERT_IN'
            : log.action === 'horizontalSplit'
              ? 'HORIZONTAL_SPLIT'
              : 'HORIZONTAL_MERGE';
        const usd = log.action === 'convert' ? 0 : log.usd / conditions.length;
        events.legs.push(
          legOf(log, holder, directory.v2ConditionOf(conditionId), legKind, log.tokens, usd, ts, contracts),
        );
      });
      return { kind: 'events', ...events };
    }
  }
}

/** A neg-risk event's conditions: the real ones, and the synthetic "Other" when a source named its YES position. */
function eventConditions(eventId: string, directory: TokenDirectory): string[] {
  const all = v2EventConditions(eventId, true);
  const other = all.at(-1)!;
  return directory.lookup(v2PositionId(other, 0)) ? all : all.slice(0, -1);
}

/**
 * The one user each transaction of a range acts for, where its logs name exactly one: the wallet on the
 * other side of an intermediary's ERC-1155 transfers (a collateral adapter pulls the user's positions or
 * sends them theirs), and the initiator of a Router action. A transaction lies within one block, so within
 * one range.
 */
export function principalsOf(logs: readonly DecodedLog[], contracts: ArchiveContracts): Map<string, string> {
  const candidates = new Map<string, Set<string>>();
  const add = (txHash: string, wallet: string) => {
    if (contracts.all.has(wallet) || wallet === NO_ADDRESS) return;
    let set = candidates.get(txHash);
    if (!set) candidates.set(txHash, (set = new Set()));
    set.add(wallet);
  };
  for (const log of logs) {
    if (log.kind === 'transfer1155' && contracts.intermediaries.has(log.operator)) {
      add(log.txHash, log.from);
      add(log.txHash, log.to);
    } else if (log.kind === 'v2Router') add(log.txHash, log.initiator);
  }
  const principals = new Map<string, string>();
  for (const [txHash, wallets] of candidates) if (wallets.size === 1) principals.set(txHash, [...wallets][0]!);
  return principals;
}

const NO_ADDRESS = '0x0000000000000000000000000000000000000000';
