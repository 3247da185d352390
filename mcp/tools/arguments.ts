/**
 * Arguments and description pieces the tools share. Numbers come from config (plans, clamps), never
 * from literals, so a description never disagrees with what the gates and the reads do.
 */
import { z } from 'zod';
import { PLAN_IDS, type Config } from '../../config.ts';
import { historyDepthNote, marketParamsSchema } from '../../operations/markets.ts';

/**
 * The longest text any argument of a tool may carry: far above every legitimate value (a wallet is 42
 * characters, a condition_id 66, a profile URL or display name a few dozen; the REST tape routes bound
 * `tape_id`, `wallet` and `types` the same way), far below what would cost a read. A longer argument is
 * refused by the SDK's input validation (an isError result naming the argument) before the gates and
 * before any store read.
 */
export const ARGUMENT_MAX_CHARS = 1000;

export const traderArgument = z.string().min(1).max(ARGUMENT_MAX_CHARS).meta({
  description:
    'The trader: a 0x wallet (any case), a profile URL of the upstream provider (https://polymarket.com/profile/0x… or https://polymarket.com/@name), or a display name. The answer echoes the canonical wallet and name.',
});

/** `market` is the REST route's `{condition_id}`, described for a tool caller. */
export const marketArgument = marketParamsSchema.shape.condition_id.max(ARGUMENT_MAX_CHARS).meta({
  description:
    'The market: its condition_id (0x + 64 hex), from get_top_markets or list_trader_markets rows. Anything else is refused with invalid_condition_id.',
});

export const COST = 'Costs 1 request of your budget (whoami shows what is left).';

/** The distinct-trader cap of the plans that have one, for trader-scoped tools. */
export function walletCapNote(config: Config): string {
  return PLAN_IDS.filter((id) => config.plans[id].distinctWalletsPerDay >= 0)
    .map((id) => {
      const { name, distinctWalletsPerDay } = config.plans[id];
      return `On ${name}, each new trader counts toward ${distinctWalletsPerDay} distinct traders per UTC day (repeat reads of them are free); one more is refused with wallet_quota.`;
    })
    .join(' ');
}

/** The history-depth wall of market-scoped tools. */
export function marketDepthNote(config: Config): string {
  return historyDepthNote(
    config,
    (depth) =>
      `only the trader's ${depth} most recent markets can be read; an older one is refused with depth_gated (a plan wall: relay the message, do not retry).`,
  );
}

/** The history-depth clamp of list-shaped tools. */
export function listDepthNote(config: Config, what: string): string {
  return historyDepthNote(config, (depth) => `${what} only the trader's ${depth} most recent markets.`);
}

export const PNL_RULES =
  "pnl_usd of a resolved market is its result; of an open market it is cash flow (money deployed counts as spent), and the open market's standing is pnl_marked_usd. pnl_usd includes split, merge and redemption legs that never appear as fills. The one profit to quote for a trader is upstream.pnl from get_trader_card; do not add up pnl_usd.";

export function describe(...parts: string[]): string {
  return parts.filter(Boolean).join(' ');
}
