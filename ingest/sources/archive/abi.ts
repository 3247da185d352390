/**
 * The events the archive reads, as human-readable ABI (viem parses them; we never hand-decode words).
 * Layouts and emitters: ../shared/data/polymarket/onchain/DECODING.md.
 */
import { parseAbi, toEventSelector, type AbiEvent, type AbiParameter, type Hex } from 'viem';

/** CTF Exchange V1 (standard and NegRisk exchange): side implied by which asset id is 0. */
export const exchangeV1Abi = parseAbi([
  'event OrderFilled(bytes32 indexed orderHash, address indexed maker, address indexed taker, uint256 makerAssetId, uint256 takerAssetId, uint256 makerAmountFilled, uint256 takerAmountFilled, uint256 fee)',
  'event OrdersMatched(bytes32 indexed takerOrderHash, address indexed takerOrderMaker, uint256 makerAssetId, uint256 takerAssetId, uint256 makerAmountFilled, uint256 takerAmountFilled)',
  'event TokenRegistered(uint256 indexed token0, uint256 indexed token1, bytes32 indexed conditionId)',
]);

/** CTF Exchange V2 (V2 and NegRisk V2): an explicit side, one token id, the fee in USD. */
export const exchangeV2Abi = parseAbi([
  'event OrderFilled(bytes32 indexed orderHash, address indexed maker, address indexed taker, uint8 side, uint256 tokenId, uint256 makerAmountFilled, uint256 takerAmountFilled, uint256 fee, bytes32 builder, bytes32 metadata)',
]);

/** Gnosis ConditionalTokens as deployed for Polymarket. */
export const conditionalTokensAbi = parseAbi([
  'event PositionSplit(address indexed stakeholder, address collateralToken, bytes32 indexed parentCollectionId, bytes32 indexed conditionId, uint256[] partition, uint256 amount)',
  'event PositionsMerge(address indexed stakeholder, address collateralToken, bytes32 indexed parentCollectionId, bytes32 indexed conditionId, uint256[] partition, uint256 amount)',
  'event PayoutRedemption(address indexed redeemer, address indexed collateralToken, bytes32 indexed parentCollectionId, bytes32 conditionId, uint256[] indexSets, uint256 payout)',
  'event ConditionResolution(bytes32 indexed conditionId, address indexed oracle, bytes32 indexed questionId, uint256 outcomeSlotCount, uint256[] payoutNumerators)',
  'event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)',
  'event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)',
]);

/** The NegRiskAdapter: splits, merges and redemptions of neg-risk markets on behalf of their users. */
export const negRiskAdapterAbi = parseAbi([
  'event PositionSplit(address indexed stakeholder, bytes32 indexed conditionId, uint256 amount)',
  'event PositionsMerge(address indexed stakeholder, bytes32 indexed conditionId, uint256 amount)',
  'event PositionsConverted(address indexed stakeholder, bytes32 indexed marketId, uint256 indexed indexSet, uint256 amount)',
  'event PayoutRedemption(address indexed redeemer, bytes32 indexed conditionId, uint256[] amounts, uint256 payout)',
]);

/**
 * Protocol V2's modules (BinaryModule and NegRiskModule emit the same events): splits, the second step of a
 * merge or redemption (the positions reached the module by a transfer first), neg-risk conversions and
 * horizontal splits and merges, resolutions by result vector (summing to 1,000,000), the derived neg-risk
 * results, and the link of a migrated market to its legacy condition. `bytes31` is a condition id, `bytes29`
 * an event id (position-id layout: ingest/contract/positions-v2.ts). ExchangeV3's fills have CTF Exchange
 * V2's `OrderFilled` layout and topic; the PositionManager's transfers the CTF's ERC-1155 ones.
 */
export const v2ModuleAbi = parseAbi([
  'event ConditionResolved(bytes31 indexed conditionId, uint256[] result)',
  'event PositionsSplit(address indexed initiator, bytes31 indexed conditionId, address indexed recipient0, address recipient1, uint256 amount)',
  'event PositionsMerged(address indexed initiator, bytes31 indexed conditionId, address indexed recipient, uint256 amount)',
  'event PositionRedeemed(address indexed initiator, uint256 indexed positionId, address indexed recipient, uint256 amount, uint256 payout)',
  'event MigrationConditionRegistered(bytes31 indexed v2ConditionId, bytes32 indexed legacyConditionId)',
  'event HorizontalSplit(address indexed initiator, bytes29 indexed eventId, address indexed recipient, uint256 amount)',
  'event HorizontalMerge(address indexed initiator, bytes29 indexed eventId, address indexed recipient, uint256 amount)',
  'event PositionConverted(address indexed initiator, bytes29 indexed eventId, address indexed recipient, uint256 conditionIndex, uint256 amount)',
  'event RemainingConditionsDerivableAsNo(bytes29 indexed eventId)',
  'event SyntheticConditionDerivableAsYes(bytes29 indexed eventId, bytes31 indexed conditionId)',
]);

/** Protocol V2's Router: each user action through it names the user (`initiator`), who the modules' events may not. */
export const v2RouterAbi = parseAbi([
  'event RouterPositionSplit(address indexed initiator, bytes31 indexed conditionId, uint256 amount)',
  'event RouterPositionsMerged(address indexed initiator, bytes31 indexed conditionId, uint256 amount)',
  'event RouterPositionRedeemed(address indexed initiator, uint256 indexed positionId, uint256 amount)',
  'event RouterHorizontalSplit(address indexed initiator, bytes29 indexed eventId, uint256 amount)',
  'event RouterHorizontalMerge(address indexed initiator, bytes29 indexed eventId, uint256 amount)',
  'event RouterPositionConverted(address indexed initiator, bytes29 indexed eventId, uint256 conditionIndex, uint256 amount)',
]);

/** ERC-20 transfers (USDC.e payouts): decoded for completeness, not indexed. */
const erc20Abi = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)']);

/** The contract family an event belongs to; one topic0 can only mean one event here. */
type AbiFamily =
  | 'exchangeV1'
  | 'exchangeV2'
  | 'conditionalTokens'
  | 'negRiskAdapter'
  | 'v2Module'
  | 'v2Router'
  | 'erc20';

export interface KnownEvent {
  family: AbiFamily;
  event: AbiEvent;
  topic0: Hex;
  /** The event's inputs split once: indexed ones come from topics 1.., the others from data. */
  indexed: readonly AbiParameter[];
  nonIndexed: readonly AbiParameter[];
  /** `family.name`: the decoder's rule for it. */
  rule: string;
  /**
   * Every input is a static type (no arrays, bytes or strings): the topics and the data words then form one
   * ABI-encoded tuple, indexed inputs first, which viem decodes in one call.
   */
  allStatic: boolean;
  /** Indexed inputs, then the others: the order of that tuple. */
  params: readonly AbiParameter[];
  /** `params` without the trailing inputs no rule reads (V2's builder and metadata): viem decodes a prefix. */
  read: readonly AbiParameter[];
}

/** Inputs the decoder's rules never read. */
const UNREAD = new Set(['builder', 'metadata']);

function withoutUnreadTail(params: readonly AbiParameter[]): readonly AbiParameter[] {
  let end = params.length;
  while (end > 0 && UNREAD.has(params[end - 1]!.name ?? '')) end--;
  return params.slice(0, end);
}

const isStatic = (parameter: AbiParameter) => !/\[|^bytes$|^string$|^tuple/.test(parameter.type);

const FAMILIES: Record<AbiFamily, readonly AbiEvent[]> = {
  exchangeV1: exchangeV1Abi,
  exchangeV2: exchangeV2Abi,
  conditionalTokens: conditionalTokensAbi,
  negRiskAdapter: negRiskAdapterAbi,
  v2Module: v2ModuleAbi,
  v2Router: v2RouterAbi,
  erc20: erc20Abi,
};

/** topic0 → event, built once. */
export const EVENTS_BY_TOPIC0: ReadonlyMap<string, KnownEvent> = new Map(
  Object.entries(FAMILIES).flatMap(([family, events]) =>
    events.map((event) => {
      const topic0 = toEventSelector(event);
      const indexed = event.inputs.filter((input) => input.indexed);
      const nonIndexed = event.inputs.filter((input) => !input.indexed);
      const params = [...indexed, ...nonIndexed];
      const known: KnownEvent = {
        family: family as AbiFamily,
        event,
        topic0,
        indexed,
        nonIndexed,
        rule: `${family}.${event.name}`,
        allStatic: params.every(isStatic),
        params,
        read: withoutUnreadTail(params),
      };
      return [topic0, known] as const;
    }),
  ),
);

function topic0Of(family: AbiFamily, name: string): Hex {
  for (const known of EVENTS_BY_TOPIC0.values())
    if (known.family === family && known.event.name === name) return known.topic0;
  throw new Error(`no event ${family}.${name}`);
}

/** The topic0s the archive asks the node for (never OrdersMatched: it repeats the taker leg). */
export const INDEXED_TOPIC0S = {
  exchange: [
    topic0Of('exchangeV1', 'OrderFilled'),
    topic0Of('exchangeV2', 'OrderFilled'),
    topic0Of('exchangeV1', 'TokenRegistered'),
  ],
  conditionalTokens: [
    topic0Of('conditionalTokens', 'PositionSplit'),
    topic0Of('conditionalTokens', 'PositionsMerge'),
    topic0Of('conditionalTokens', 'PayoutRedemption'),
    topic0Of('conditionalTokens', 'ConditionResolution'),
  ],
  negRiskAdapter: [
    topic0Of('negRiskAdapter', 'PositionSplit'),
    topic0Of('negRiskAdapter', 'PositionsMerge'),
    topic0Of('negRiskAdapter', 'PositionsConverted'),
    topic0Of('negRiskAdapter', 'PayoutRedemption'),
  ],
  v2Modules: v2ModuleAbi.map((event) => topic0Of('v2Module', event.name)),
  v2Router: v2RouterAbi.map((event) => topic0Of('v2Router', event.name)),
  /**
   * ERC-1155 transfers, asked for only where a collateral adapter is the operator: the user such an adapter
   * acts for is the other side of its transfers in the same transaction.
   */
  transfers: [topic0Of('conditionalTokens', 'TransferSingle'), topic0Of('conditionalTokens', 'TransferBatch')],
} as const;
