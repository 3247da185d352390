/**
 * Polymarket's contracts on Polygon: facts of the chain, not settings. Every archive reads these
 * addresses (lower-case); a deployment that indexes other contracts is another program.
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
