/**
 * A generated Polymarket world on a local chain: markets (registered on the exchange, or Protocol V2 markets
 * known by their position ids' bits), matches (N maker
 * orders and the taker's own leg, then OrdersMatched, exactly as the exchange emits them), splits, 50/50 and
 * winner resolutions, redemptions, and legs the archive must leave out (the exchange as stakeholder). The
 * logs are encoded with viem's encoder; the fills the test expects come from the generator's own records,
 * never from the decoder.
 */
import { encodeAbiParameters, encodeEventTopics, pad, toHex, type Hex } from 'viem';
import { conditionalTokensAbi, exchangeV1Abi, exchangeV2Abi, v2ModuleAbi } from '../../ingest/sources/archive/abi.ts';
import { POLYMARKET_PROTOCOL_V2 } from '../../chain.ts';
import type { RawLog } from '../../ingest/sources/archive/decode.ts';
import { positionId } from '../../ingest/sources/archive/positions.ts';
import { mulberry32 } from '../factories.ts';

export const CONTRACTS = {
  exchangeV2: '0xe111180000d2663c0091e4f400237545b87b996b',
  negRiskExchangeV2: '0xe2222d279d744050d28e00520010520000310f59',
  conditionalTokens: '0x4d97dcd97ec945f40cf65f87097ace5ea0476045',
  usdc: '0x2791bca1f2de4661ed88a30c99a7a9449aa84174',
} as const;

interface WorldFill {
  txHash: string;
  logIndex: number;
  wallet: string;
  conditionId: string;
  side: 'BUY' | 'SELL';
  tokenSide: 1 | 2;
  tokensMicro: bigint;
  usdMicro: bigint;
  feeMicro: bigint;
  ts: number;
}

interface WorldLeg {
  wallet: string;
  conditionId: string;
  kind: 'SPLIT' | 'REDEEM';
  usdMicro: bigint;
  ts: number;
}

interface WorldMarket {
  /** A Protocol V2 market (BinaryModule positions, traded on ExchangeV3); else a CTF market. */
  v2: boolean;
  conditionId: Hex;
  token1: bigint;
  token2: bigint;
  /** Payout numerators, once resolved. */
  payouts: [number, number] | null;
  resolvedTs: number | null;
}

export interface ChainWorld {
  markets: WorldMarket[];
  fills: WorldFill[];
  legs: WorldLeg[];
  wallets: string[];
  /** Block → logs, in emission order. */
  blocks: Map<number, RawLog[]>;
  firstBlock: number;
  lastBlock: number;
  timestampOf(block: number): number;
  /** How many logs in all (OrdersMatched and skipped legs included). */
  logCount: number;
}

const GENESIS_TS = 1_780_000_000;

const address = (label: number) => `0x${(0xa11ce000 + label).toString(16).padStart(40, '0')}` as Hex;

export interface WorldOptions {
  seed: number;
  markets: number;
  wallets: number;
  matches: number;
  firstBlock?: number;
  /** Blocks between consecutive transactions. */
  blockStep?: number;
  /**
   * Every n-th market is a Protocol V2 market: no registration (its position ids are its condition id's
   * bits), fills on ExchangeV3, splits, resolutions (result vectors) and redemptions on the BinaryModule.
   */
  v2Every?: number;
}

/** A `bytes31` condition id argument: the 32-byte id's first 31 bytes. */
const bytes31 = (conditionId: Hex) => conditionId.slice(0, 64) as Hex;

export function generateWorld(options: WorldOptions): ChainWorld {
  const next = mulberry32(options.seed);
  const int = (below: number) => Math.floor(next() * below);
  const firstBlock = options.firstBlock ?? 1000;
  const blockStep = options.blockStep ?? 1;
  const timestampOf = (block: number) => GENESIS_TS + (block - firstBlock) * 2;
  const blocks = new Map<number, RawLog[]>();
  let block = firstBlock;
  let txSerial = 0;
  let logCount = 0;
  const emit = (
    logs: Array<{ address: Hex; topics: Hex[]; data: Hex }>,
  ): { txHash: Hex; block: number; logIndexes: number[] } => {
    const txHash = pad(toHex(++txSerial), { size: 32 });
    const list = blocks.get(block) ?? [];
    blocks.set(block, list);
    const logIndexes: number[] = [];
    for (const log of logs) {
      const logIndex = list.length;
      logIndexes.push(logIndex);
      list.push({
        address: log.address,
        topics: log.topics,
        data: log.data,
        blockNumber: toHex(block),
        transactionHash: txHash,
        logIndex: toHex(logIndex),
        blockTimestamp: toHex(timestampOf(block)),
        removed: false,
      });
      logCount++;
    }
    const at = { txHash, block, logIndexes };
    block += blockStep;
    return at;
  };

  const wallets = Array.from({ length: options.wallets }, (_, index) => address(index + 1));
  const markets: WorldMarket[] = [];
  for (let index = 0; index < options.markets; index++) {
    if (options.v2Every !== undefined && index % options.v2Every === options.v2Every - 1) {
      // BinaryModule (module 1) | a base hash | outcome 0: the condition id is the YES position id.
      const condition = (1n << 248n) | (BigInt(0xc0de0000 + index * 7919 + options.seed) << 120n);
      const conditionId = toHex(condition, { size: 32 });
      markets.push({
        v2: true,
        conditionId,
        token1: condition,
        token2: condition | 1n,
        payouts: null,
        resolvedTs: null,
      });
      continue;
    }
    const conditionId = pad(toHex(0xc0de0000 + index * 7919 + options.seed), { size: 32 });
    const token1 = positionId(CONTRACTS.usdc, conditionId, 1n);
    const token2 = positionId(CONTRACTS.usdc, conditionId, 2n);
    markets.push({ v2: false, conditionId, token1, token2, payouts: null, resolvedTs: null });
    // The registry emits the pair in both orders.
    const registered = (a: bigint, b: bigint) => ({
      address: CONTRACTS.exchangeV2 as Hex,
      topics: encodeEventTopics({
        abi: exchangeV1Abi,
        eventName: 'TokenRegistered',
        args: { token0: a, token1: b, conditionId },
      }) as Hex[],
      data: '0x' as Hex,
    });
    emit([registered(token2, token1), registered(token1, token2)]);
  }

  const fills: WorldFill[] = [];
  const legs: WorldLeg[] = [];
  const orderFilled = (
    exchange: Hex,
    maker: Hex,
    taker: Hex,
    side: 0 | 1,
    tokenId: bigint,
    making: bigint,
    taking: bigint,
    fee: bigint,
  ) => ({
    address: exchange,
    ...v2OrderFilled({
      orderHash: pad(toHex(int(2 ** 31)), { size: 32 }),
      maker,
      taker,
      side,
      tokenId,
      making,
      taking,
      fee,
    }),
  });

  for (let match = 0; match < options.matches; match++) {
    const market = markets[int(markets.length)]!;
    const exchange = (market.v2 ? POLYMARKET_PROTOCOL_V2.exchangeV3 : CONTRACTS.exchangeV2) as Hex;
    const tokenSide = (int(2) + 1) as 1 | 2;
    const tokenId = tokenSide === 1 ? market.token1 : market.token2;
    const takerSide = int(2) === 0 ? 'BUY' : 'SELL';
    const makerSide = takerSide === 'BUY' ? 'SELL' : 'BUY';
    const taker = wallets[int(wallets.length)]!;
    const makerCount = 1 + int(3);
    const makers: { wallet: Hex; tokens: bigint; usd: bigint }[] = [];
    for (let index = 0; index < makerCount; index++) {
      let wallet = wallets[int(wallets.length)]!;
      if (wallet === taker) wallet = wallets[(wallets.indexOf(wallet) + 1) % wallets.length]!;
      const tokens = BigInt(1 + int(500)) * 10_000n; // 0.01 .. 5.00 tokens
      const cents = BigInt(1 + int(99));
      makers.push({ wallet, tokens, usd: (tokens * cents) / 100n });
    }
    const tokens = makers.reduce((sum, maker) => sum + maker.tokens, 0n);
    const usd = makers.reduce((sum, maker) => sum + maker.usd, 0n);
    const fee = BigInt(int(3)) * 1_000n;
    const sideCode = (side: string) => (side === 'BUY' ? 0 : 1) as 0 | 1;
    // BUY: maker amount = USD, taker amount = tokens; SELL: the reverse.
    const amounts = (side: string, t: bigint, u: bigint) => (side === 'BUY' ? [u, t] : [t, u]) as [bigint, bigint];
    const logs = [
      ...makers.map((maker) =>
        orderFilled(
          exchange,
          maker.wallet,
          taker,
          sideCode(makerSide),
          tokenId,
          ...amounts(makerSide, maker.tokens, maker.usd),
          0n,
        ),
      ),
      orderFilled(exchange, taker, exchange, sideCode(takerSide), tokenId, ...amounts(takerSide, tokens, usd), fee),
      {
        address: exchange,
        topics: encodeEventTopics({
          abi: exchangeV1Abi,
          eventName: 'OrdersMatched',
          args: { takerOrderHash: pad('0x1'), takerOrderMaker: taker },
        }) as Hex[],
        data: encodeAbiParameters(
          [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }],
          [0n, tokenId, usd, tokens],
        ),
      },
    ];
    const at = emit(logs);
    const ts = timestampOf(at.block);
    makers.forEach((maker, index) => {
      fills.push({
        txHash: at.txHash,
        logIndex: at.logIndexes[index]!,
        wallet: maker.wallet,
        conditionId: market.conditionId,
        side: makerSide,
        tokenSide,
        tokensMicro: maker.tokens,
        usdMicro: maker.usd,
        feeMicro: 0n,
        ts,
      });
    });
    fills.push({
      txHash: at.txHash,
      logIndex: at.logIndexes[makerCount]!,
      wallet: taker,
      conditionId: market.conditionId,
      side: takerSide,
      tokenSide,
      tokensMicro: tokens,
      usdMicro: usd,
      feeMicro: fee,
      ts,
    });

    if (match % 7 === 3) {
      // A user's split, and the exchange's own (a MINT match): the second is left out.
      const splitter = wallets[int(wallets.length)]!;
      const amount = BigInt(1 + int(300)) * 10_000n;
      const split = (stakeholder: Hex) =>
        market.v2
          ? {
              address: POLYMARKET_PROTOCOL_V2.binaryModule as Hex,
              topics: encodeEventTopics({
                abi: v2ModuleAbi,
                eventName: 'PositionsSplit',
                args: { initiator: stakeholder, conditionId: bytes31(market.conditionId), recipient0: splitter },
              }) as Hex[],
              data: encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [splitter, amount]),
            }
          : {
              address: CONTRACTS.conditionalTokens as Hex,
              topics: encodeEventTopics({
                abi: conditionalTokensAbi,
                eventName: 'PositionSplit',
                args: { stakeholder, parentCollectionId: pad('0x0'), conditionId: market.conditionId },
              }) as Hex[],
              data: encodeAbiParameters(
                [{ type: 'address' }, { type: 'uint256[]' }, { type: 'uint256' }],
                [CONTRACTS.usdc, [1n, 2n], amount],
              ),
            };
      const splitAt = emit([split(splitter), split(exchange)]);
      legs.push({
        wallet: splitter,
        conditionId: market.conditionId,
        kind: 'SPLIT',
        usdMicro: amount,
        ts: timestampOf(splitAt.block),
      });
    }
  }

  // Resolutions: a third each of token 1 winning, token 2 winning, and 50/50; most markets resolve.
  markets.forEach((market, index) => {
    if (index % 5 === 4) return; // stays open
    market.payouts = index % 3 === 0 ? [1, 0] : index % 3 === 1 ? [0, 1] : [1, 1];
    const [p1, p2] = market.payouts;
    const result = [(1_000_000n * BigInt(p1)) / BigInt(p1 + p2), (1_000_000n * BigInt(p2)) / BigInt(p1 + p2)];
    const at = emit([
      market.v2
        ? {
            address: POLYMARKET_PROTOCOL_V2.binaryModule as Hex,
            topics: encodeEventTopics({
              abi: v2ModuleAbi,
              eventName: 'ConditionResolved',
              args: { conditionId: bytes31(market.conditionId) },
            }) as Hex[],
            data: encodeAbiParameters([{ type: 'uint256[]' }], [result]),
          }
        : {
            address: CONTRACTS.conditionalTokens as Hex,
            topics: encodeEventTopics({
              abi: conditionalTokensAbi,
              eventName: 'ConditionResolution',
              args: { conditionId: market.conditionId, oracle: address(9999), questionId: pad('0x5') },
            }) as Hex[],
            data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256[]' }], [2n, market.payouts.map(BigInt)]),
          },
    ]);
    market.resolvedTs = timestampOf(at.block);
  });

  // Redemptions: some holders redeem everything they hold of a resolved market, at what it pays.
  const held = new Map<string, [bigint, bigint]>();
  const key = (wallet: string, conditionId: string) => `${wallet}|${conditionId}`;
  for (const fill of fills) {
    const entry = held.get(key(fill.wallet, fill.conditionId)) ?? [0n, 0n];
    entry[fill.tokenSide - 1]! += fill.side === 'BUY' ? fill.tokensMicro : -fill.tokensMicro;
    held.set(key(fill.wallet, fill.conditionId), entry);
  }
  for (const leg of legs) {
    const entry = held.get(key(leg.wallet, leg.conditionId)) ?? [0n, 0n];
    entry[0] += leg.usdMicro;
    entry[1] += leg.usdMicro;
    held.set(key(leg.wallet, leg.conditionId), entry);
  }
  let redemptions = 0;
  for (const [entryKey, [one, two]] of held) {
    const [wallet, conditionId] = entryKey.split('|') as [Hex, Hex];
    const market = markets.find((candidate) => candidate.conditionId === conditionId)!;
    if (!market.payouts || one < 0n || two < 0n || redemptions++ % 2 === 1) continue;
    const [p1, p2] = market.payouts;
    const payout = (one * BigInt(p1) + two * BigInt(p2)) / BigInt(p1 + p2);
    if ((one * BigInt(p1) + two * BigInt(p2)) % BigInt(p1 + p2) !== 0n || payout === 0n) continue;
    if (market.v2) {
      if ((one * BigInt(p1)) % BigInt(p1 + p2) !== 0n || (two * BigInt(p2)) % BigInt(p1 + p2) !== 0n) continue;
      // One redemption per position held, each paying its amount at the result (the losing side: nothing).
      const sides = [
        [market.token1, one, (one * BigInt(p1)) / BigInt(p1 + p2)],
        [market.token2, two, (two * BigInt(p2)) / BigInt(p1 + p2)],
      ] as const;
      const at = emit(
        sides
          .filter(([, amount]) => amount > 0n)
          .map(([position, amount, paid]) => ({
            address: POLYMARKET_PROTOCOL_V2.binaryModule as Hex,
            topics: encodeEventTopics({
              abi: v2ModuleAbi,
              eventName: 'PositionRedeemed',
              args: { initiator: wallet, positionId: position, recipient: wallet },
            }) as Hex[],
            data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [amount, paid]),
          })),
      );
      legs.push({ wallet, conditionId, kind: 'REDEEM', usdMicro: payout, ts: timestampOf(at.block) });
      continue;
    }
    const at = emit([
      {
        address: CONTRACTS.conditionalTokens as Hex,
        topics: encodeEventTopics({
          abi: conditionalTokensAbi,
          eventName: 'PayoutRedemption',
          args: { redeemer: wallet, collateralToken: CONTRACTS.usdc, parentCollectionId: pad('0x0') },
        }) as Hex[],
        data: encodeAbiParameters(
          [{ type: 'bytes32' }, { type: 'uint256[]' }, { type: 'uint256' }],
          [conditionId, [1n, 2n], payout],
        ),
      },
    ]);
    legs.push({ wallet, conditionId, kind: 'REDEEM', usdMicro: payout, ts: timestampOf(at.block) });
  }

  return {
    markets,
    fills,
    legs,
    wallets: [...wallets],
    blocks,
    firstBlock,
    lastBlock: block - blockStep,
    timestampOf,
    logCount,
  };
}

/** Per wallet and market: the figures the projections must show, computed from the world's own records. */
export interface ReferenceMarket {
  fills: number;
  buyUsd: number;
  sellUsd: number;
  feeUsd: number;
  resolved: boolean;
  /** Resolved: cash flow net of fees plus unredeemed holdings at what they paid. Open: cash flow. */
  pnlUsd: number;
  /** The market row's last_traded_at: the last fill, or with none the last leg. */
  lastTs: number;
}

export function reference(world: ChainWorld): Map<string, Map<string, ReferenceMarket>> {
  const result = new Map<string, Map<string, ReferenceMarket>>();
  const holdings = new Map<string, [number, number, boolean]>();
  const entry = (wallet: string, conditionId: string): ReferenceMarket => {
    let byMarket = result.get(wallet);
    if (!byMarket) result.set(wallet, (byMarket = new Map()));
    let market = byMarket.get(conditionId);
    if (!market) {
      const resolved = world.markets.find((candidate) => candidate.conditionId === conditionId)!.payouts !== null;
      byMarket.set(
        conditionId,
        (market = { fills: 0, buyUsd: 0, sellUsd: 0, feeUsd: 0, resolved, pnlUsd: 0, lastTs: 0 }),
      );
    }
    return market;
  };
  const hold = (wallet: string, conditionId: string) => {
    const key = `${wallet}|${conditionId}`;
    let held = holdings.get(key);
    if (!held) holdings.set(key, (held = [0, 0, false]));
    return held;
  };
  for (const fill of world.fills) {
    const market = entry(fill.wallet, fill.conditionId);
    const usd = Number(fill.usdMicro) / 1e6;
    const fee = Number(fill.feeMicro) / 1e6;
    market.fills++;
    if (fill.side === 'BUY') market.buyUsd += usd;
    else market.sellUsd += usd;
    market.feeUsd += fee;
    market.pnlUsd += (fill.side === 'SELL' ? usd : -usd) - fee;
    market.lastTs = Math.max(market.lastTs, fill.ts);
    const held = hold(fill.wallet, fill.conditionId);
    const delta = (fill.side === 'BUY' ? 1 : -1) * (Number(fill.tokensMicro) / 1e6);
    if (fill.tokenSide === 1) held[0] += delta;
    else held[1] += delta;
  }
  for (const leg of world.legs) {
    const market = entry(leg.wallet, leg.conditionId);
    const usd = Number(leg.usdMicro) / 1e6;
    // The last fill (every fill is counted by now); a market with legs only takes its last leg.
    if (market.fills === 0) market.lastTs = Math.max(market.lastTs, leg.ts);
    const held = hold(leg.wallet, leg.conditionId);
    if (leg.kind === 'SPLIT') {
      market.pnlUsd -= usd;
      held[0] += usd;
      held[1] += usd;
    } else {
      market.pnlUsd += usd;
      held[2] = true; // redeemed everything held
    }
  }
  for (const [key, [one, two, redeemed]] of holdings) {
    const [wallet, conditionId] = key.split('|') as [string, string];
    const market = world.markets.find((candidate) => candidate.conditionId === conditionId)!;
    if (!market.payouts || redeemed) continue;
    const [p1, p2] = market.payouts;
    result.get(wallet)!.get(conditionId)!.pnlUsd += (one * p1 + two * p2) / (p1 + p2);
  }
  return result;
}

/** The topics and data of a CTF Exchange V2 `OrderFilled` log (side 0: the maker buys). */
export function v2OrderFilled(fill: {
  orderHash: Hex;
  maker: Hex;
  taker: Hex;
  side: 0 | 1;
  tokenId: bigint;
  making: bigint;
  taking: bigint;
  fee: bigint;
}): { topics: Hex[]; data: Hex } {
  return {
    topics: encodeEventTopics({
      abi: exchangeV2Abi,
      eventName: 'OrderFilled',
      args: { orderHash: fill.orderHash, maker: fill.maker, taker: fill.taker },
    }) as Hex[],
    data: encodeAbiParameters(
      [
        { type: 'uint8' },
        { type: 'uint256' },
        { type: 'uint256' },
        { type: 'uint256' },
        { type: 'uint256' },
        { type: 'bytes32' },
        { type: 'bytes32' },
      ],
      [fill.side, fill.tokenId, fill.making, fill.taking, fill.fee, pad('0x0'), pad('0x0')],
    ),
  };
}
