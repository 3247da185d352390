/** The protocol's contracts as the archive reads them: the sets the facts are told by, and the logs it asks the node for. */
import { pad, type Hex } from 'viem';
import type { ArchiveConfig } from '../../../config.ts';
import { INDEXED_TOPIC0S } from './abi.ts';
import type { ArchiveContracts } from './facts.ts';
import type { GetLogsFilter } from './rpc.ts';

export function contractsOf(config: ArchiveConfig): ArchiveContracts {
  const c = config.contracts;
  const v2 = config.protocolV2;
  const exchanges = new Set<string>([
    c.ctfExchange,
    c.negRiskExchange,
    c.ctfExchangeV2,
    c.negRiskExchangeV2,
    v2.exchangeV3,
  ]);
  const intermediaries = new Set<string>([...config.collateralAdapters, v2.router, v2.autoRedeemer]);
  return {
    exchanges,
    exchangesV3: new Set([v2.exchangeV3]),
    intermediaries,
    negRiskExchanges: new Set([c.negRiskExchange, c.negRiskExchangeV2]),
    all: new Set([...exchanges, ...intermediaries, ...Object.values(v2), c.conditionalTokens, c.negRiskAdapter]),
    collaterals: config.collaterals,
    negRiskAdapter: c.negRiskAdapter,
    v2StartTs: config.v2StartTs,
  };
}

/** The logs the archive reads: every event of ours from the protocol's contracts. */
export function logsFilter(config: ArchiveConfig, fromBlock: number, toBlock: number): GetLogsFilter {
  const c = config.contracts;
  const v2 = config.protocolV2;
  return {
    fromBlock,
    toBlock,
    address: [
      c.ctfExchange,
      c.negRiskExchange,
      c.ctfExchangeV2,
      c.negRiskExchangeV2,
      c.conditionalTokens,
      c.negRiskAdapter,
      v2.exchangeV3,
      v2.binaryModule,
      v2.negRiskModule,
      v2.router,
    ] as Hex[],
    topics: [
      [
        ...INDEXED_TOPIC0S.exchange,
        ...INDEXED_TOPIC0S.conditionalTokens,
        ...INDEXED_TOPIC0S.negRiskAdapter,
        ...INDEXED_TOPIC0S.v2Modules,
        ...INDEXED_TOPIC0S.v2Router,
      ],
    ] as Hex[][],
  };
}

/**
 * The ERC-1155 transfers a collateral adapter makes (it is their operator): the other side of them is the
 * user the adapter's split, merge, redemption or conversion in the same transaction is for.
 */
export function intermediaryTransfersFilter(config: ArchiveConfig, fromBlock: number, toBlock: number): GetLogsFilter {
  const { contracts, collateralAdapters } = config;
  return {
    fromBlock,
    toBlock,
    address: [contracts.conditionalTokens] as Hex[],
    topics: [
      [...INDEXED_TOPIC0S.transfers],
      collateralAdapters.map((adapter) => pad(adapter, { size: 32 })),
    ] as Hex[][],
  };
}
