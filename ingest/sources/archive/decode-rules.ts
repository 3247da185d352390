/**
 * The rules of DECODING.md, from an event's decoded inputs to one domain fact: 6-decimal amounts, the side
 * of a V1 fill from which asset is 0, price = USD ÷ tokens, the fee's unit (V2: USD; V1: a BUY's fee in
 * tokens, a SELL's in USD), the trader is the `maker` topic; and what the contracts can state (a fact
 * outside it is `OutOfDomain`). decode.ts reads the log's bytes into the inputs these rules take.
 */
import type { Hex } from 'viem';
import { paddedV2Id } from '../../contract/positions-v2.ts';
import { redemptionPayout } from '../../contract/primitives.ts';

/** USDC and outcome tokens both have 6 decimals. */
const UNIT = 1e6;

/**
 * The most base units of collateral (or of outcome tokens, each backed by one unit of it) one amount can
 * hold: the contract's MAX_AMOUNT. A larger uint256 is a forged or corrupt log, not a trade.
 */
const MAX_UNITS = BigInt(Number.MAX_SAFE_INTEGER);

/** A log of one of our events whose values lie outside what the contract can state: dead-lettered, never published. */
export class OutOfDomain extends Error {}

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

const lower = (address: string) => address.toLowerCase() as Hex;

/** The fact the decoded inputs `a` of the event `name` (its `rule`) state; OutOfDomain when no contract could state it. */
export function interpret(rule: string, name: string, a: Record<string, unknown>): Decoded {
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
