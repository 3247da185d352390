/**
 * Facts of the chain Polymarket runs on (Polygon), not settings: its contracts, the V1 exchanges'
 * deployment blocks and the V1 → V2 cut-over. One leaf on the ground floor: the configuration, the archive,
 * the importer, the projections and the card's operation all read them here, and it imports nothing.
 * A deployment that indexes other contracts is another program.
 */

/** The exchanges (V1 and V2, plain and NegRisk), the conditional tokens and the NegRisk adapter. */
export const POLYMARKET_CONTRACTS = {
  ctfExchange: '0x4bfb41d5b3570defd03c39a9a4d8de6bd8b8982e',
  negRiskExchange: '0xc5d563a36ae78145c45a50134d48a1215220f80a',
  ctfExchangeV2: '0xe111180000d2663c0091e4f400237545b87b996b',
  negRiskExchangeV2: '0xe2222d279d744050d28e00520010520000310f59',
  conditionalTokens: '0x4d97dcd97ec945f40cf65f87097ace5ea0476045',
  negRiskAdapter: '0xd91e80cf2e7be2e162c6513ced06f1dd0da35296',
} as const satisfies Record<string, `0x${string}`>;

/** Collaterals whose position ids name outcome 0 of a registered token pair: USDC.e, the NegRisk wrapped collateral, pUSD. */
export const POLYMARKET_COLLATERALS: readonly `0x${string}`[] = [
  '0x2791bca1f2de4661ed88a30c99a7a9449aa84174',
  '0x3a3bd7bb9528e159577f7c2e685cc81a765002e2',
  '0xc011a7e12a19f7b1f670d46f03b03f3342e82dfb',
];

/**
 * Other protocol contracts that act for users (the V2 pUSD collateral adapters, current and retired): a leg
 * whose stakeholder is one of them is left out with a counter, never attributed to the contract.
 */
export const POLYMARKET_COLLATERAL_ADAPTERS: readonly `0x${string}`[] = [
  '0xada100db00ca00073811820692005400218fce1f',
  '0xada2005600dec949baf300f4c6120000bdb6eaab',
  '0xada100874d00e3331d00f2007a9c336a65009718',
  '0xada200001000ef00d07553cee7006808f895c6f1',
];

/**
 * Polymarket Protocol V2 (markets whose Gamma `version` is "v2"), as proxies: an implementation upgrade keeps
 * the address, so the book changes only when Polymarket deploys a new contract. Facts and sources:
 * ../shared/data/polymarket/onchain/protocol-v2/README.md. Its `OrderFilled` has the same topic as CTF
 * Exchange V2's: the emitting address tells them apart.
 */
export const POLYMARKET_PROTOCOL_V2 = {
  exchangeV3: '0xe3333700ca9d93003f00f0f71f8515005f6c00aa',
  positionManager: '0x006f54f7f9a22e0000cc2ab60031000000ae9fef',
  router: '0x12121212006e4cd160d18e3f00711da5c3372600',
  binaryModule: '0x1000008dd9001b968442c1000017eae6e0da00ba',
  negRiskModule: '0x200000900045e3b6259600682756002200028933',
  combinatorialModule: '0x30000034706c7d8e12009dab006be20000c031a8',
  autoRedeemer: '0xa1200000d0002264c9a1698e001292d00e1b00af',
} as const satisfies Record<string, `0x${string}`>;

/** 2026-04-28 11:15 UTC: the V1 → V2 exchange cut-over (see `exchangeEraAt` in ingest/contract/primitives.ts). */
export const DEFAULT_EXCHANGE_V2_START_TS = 1_777_374_900;

/**
 * The blocks that deployed the V1 exchanges (Polymarket/polymarket-subgraph, networks.yaml, matic): the V1
 * era's trading cannot start before the earliest of them, so an archive indexed from there to the cut-over
 * holds all of it (projections/coverage.ts).
 */
const POLYMARKET_V1_EXCHANGE_DEPLOYMENT_BLOCKS = {
  ctfExchange: 33_605_403,
  negRiskExchange: 50_505_492,
} as const satisfies Record<string, number>;

/** Where the V1 era's logs begin: the first V1 exchange's deployment. */
export const POLYMARKET_V1_FIRST_BLOCK = Math.min(...Object.values(POLYMARKET_V1_EXCHANGE_DEPLOYMENT_BLOCKS));
