/**
 * The skill leaderboard (REST `GET /leaderboard`, MCP list_skilled_traders): the shelf that lets an agent
 * find traders instead of being handed ten. Wallets with at least SKILL_MIN_MARKETS resolved markets with
 * entries in the window, ranked by shrunk edge, calibration or pnl (projections/skill.ts, docs/skill.md).
 */
import { z } from 'zod';
import { compareIds } from '../projections/market-parts.ts';
import { SKILL_FALSE_DISCOVERY_RATE } from '../projections/luck.ts';
import { SKILL_MIN_MARKETS, type SkilledTrader } from '../projections/skill.ts';
import type { RouteContext } from './context.ts';
import { limitParameter, pageLimit, queryAsOf, queryCursor } from './parameters.ts';

const LEADERBOARD_ORDERS = ['edge', 'calibration', 'pnl'] as const;
const WINDOW_NAMES = ['all', '90d', '30d', '7d'] as const;
/** Windows of the markets counted: resolved within the last N days, or all (0). */
const WINDOW_DAYS: Record<(typeof WINDOW_NAMES)[number], number> = { all: 0, '90d': 90, '30d': 30, '7d': 7 };
const PAGE = { defaultLimit: 50, maxLimit: 200 } as const;

export const leaderboardQuerySchema = z.object({
  by: z.enum(LEADERBOARD_ORDERS).optional().meta({
    description:
      'edge (default): the edge shrunk by its evidence, highest first; calibration: the Brier score of the entry prices, lowest first (wallets with buys only); pnl: the realized result over the window, highest first. Any other value is 422.',
    default: 'edge',
  }),
  window: z.enum(WINDOW_NAMES).optional().meta({
    description:
      'Markets resolved in the last 7d, 30d or 90d (before as_of when given), or all (default). Any other value is 422.',
  }),
  distinguishable_from_luck: z.enum(['true', 'false']).optional().meta({
    description:
      'true: only the traders told from luck (q_value at most false_discovery_rate); false: only the others. Absent: all. Any other value is 422.',
  }),
  as_of: queryAsOf,
  cursor: queryCursor,
  limit: limitParameter(PAGE, 'traders'),
});

const skilledTraderSchema = z.object({
  rank: z.int().min(1),
  wallet: z.string(),
  name: z.string().meta({ description: "The provider's display name; empty when unknown." }),
  markets: z.int().min(0).meta({ description: 'Resolved markets with entries in the window.' }),
  cost_usd: z.number(),
  pnl_usd: z.number(),
  edge: z.number().meta({ description: 'Σ pnl ÷ Σ cost over those markets (per dollar of entries).' }),
  edge_shrunk: z.number().meta({ description: 'The edge shrunk toward 0 by its evidence (docs/skill.md).' }),
  brier: z
    .number()
    .nullable()
    .meta({ description: 'Token-weighted Brier score of the entry prices; null without buys.' }),
  luck_probability: z.number().meta({
    description:
      "At most this likely by luck: the bound of get_trader_skill's edge.luck_probability over the window's markets (1 without buys).",
  }),
  q_value: z.number().meta({
    description:
      "The luck probability corrected for the many traders ranked in the window (Benjamini–Hochberg over the window's whole population as of its instant): the false-discovery rate at which this trader would first be told from luck.",
  }),
  distinguishable_from_luck: z.boolean().meta({ description: 'q_value is at most false_discovery_rate.' }),
});

export const leaderboardSchema = z.object({
  by: z.enum(LEADERBOARD_ORDERS),
  window: z.string(),
  min_markets: z.int().meta({ description: 'The sample a wallet needs to be listed.' }),
  prior_sd: z.number().meta({ description: "The window's prior spread of edges (the shrinkage's)." }),
  false_discovery_rate: z.number().meta({
    description:
      'The level at which distinguishable_from_luck tells traders from luck: at most this share of them is expected to be lucky.',
  }),
  traders: z.array(skilledTraderSchema),
  next_cursor: z.string().nullable().meta({ description: 'Pass back as cursor for the next page; null at the end.' }),
});

const byWallet = (a: SkilledTrader, b: SkilledTrader) => compareIds(a.wallet, b.wallet);
const ORDER: Record<(typeof LEADERBOARD_ORDERS)[number], (a: SkilledTrader, b: SkilledTrader) => number> = {
  edge: (a, b) => b.edge_shrunk - a.edge_shrunk || byWallet(a, b),
  calibration: (a, b) => a.brier! - b.brier! || byWallet(a, b),
  pnl: (a, b) => b.pnl_usd - a.pnl_usd || byWallet(a, b),
};

/**
 * list_skilled_traders: one page of the window's ranked wallets in the chosen order; as of a past instant, over
 * the markets the service knew resolved then (each wallet's rows known by then: projections/skill.ts).
 */
export async function listSkilledTraders(
  context: RouteContext,
  query: z.infer<typeof leaderboardQuerySchema>,
): Promise<z.infer<typeof leaderboardSchema>> {
  const by = query.by ?? 'edge';
  const window = query.window ?? 'all';
  const limit = pageLimit(query.limit, PAGE);
  const cursor = context.cursors.codec<{ offset: number }, [number]>(
    'leaderboard',
    (position) => [position.offset],
    z.tuple([z.int().min(0)]),
    ([offset]) => ({ offset }),
  );
  // A page of another instant's board is another board: its cursor is refused, not read as this one's.
  const luck = query.distinguishable_from_luck;
  const scope = `${by}:${window}:${query.as_of ?? 'now'}${luck === undefined ? '' : `:${luck}`}`;
  const offset = cursor.decode(query.cursor, scope)?.offset ?? 0;
  const days = WINDOW_DAYS[window];
  const end = query.as_of ?? context.now();
  const since = days === 0 ? 0 : Math.max(1, end - days * 86_400);
  const board = await context.reader.skillBoard(window, since, context.now(), query.as_of);
  const ranked = board.traders
    .filter((trader) => by !== 'calibration' || trader.brier !== null)
    .filter((trader) => luck === undefined || trader.distinguishable_from_luck === (luck === 'true'))
    .sort(ORDER[by]);
  const page = ranked.slice(offset, offset + limit);
  const names = await Promise.all(page.map((trader) => context.reader.traderName(trader.wallet)));
  return {
    by,
    window,
    min_markets: SKILL_MIN_MARKETS,
    prior_sd: board.priorSd,
    false_discovery_rate: SKILL_FALSE_DISCOVERY_RATE,
    traders: page.map((trader, index) => ({ rank: offset + index + 1, name: names[index]!, ...trader })),
    next_cursor: offset + limit < ranked.length ? cursor.encode(scope, { offset: offset + limit }) : null,
  };
}
