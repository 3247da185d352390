/**
 * The prompt `crack_this_trader(trader)`: a template, not a tool (fetching it costs nothing). It scripts
 * the workflow of read-api.md (whoami, card, top-markets, summaries of the revealing few, verdict,
 * optional chart) and carries the interpretation rules for profit figures.
 */
import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { ARGUMENT_MAX_CHARS } from './tools/arguments.ts';

const CRACK_THIS_TRADER = 'crack_this_trader';

function crackThisTraderText(config: Config, trader: string): string {
  const { topMarkets } = config.api;
  return `Crack the trader ${JSON.stringify(trader)}: find out how they make or lose money, and whether they are worth following.

Every tool call below costs one request of the budget (listing tools and fetching this prompt cost nothing). Plan for about ten calls, and stay on this one trader: on a plan with a distinct-trader cap every new trader counts.

1. whoami: note the plan, the calls left (usage.day on Basic, usage.month on Pro and Max) and history_depth (-1 is unlimited; otherwise only that many most recent markets of a trader are visible).
2. get_trader_card(trader): the echoed wallet and name; markets_total, resolved_total, winrate, volume_usd, first_seen and last_seen; avg_entry_price (the break-even winrate: a winrate above it means they win more often than their prices imply); avg_win_usd and avg_loss_usd; open_value_usd; and upstream.pnl, the headline profit.
3. get_top_markets(trader, n=${topMarkets.defaultN}): top_wins, top_losses, most_traded, top_volume. Then get_trader_skill(trader): edge.per_dollar with its interval_90 and edge.shrunk (good, or lucky?), calibration, rank.percentile.
4. get_market_summary(trader, market) for the revealing few, three to five at most: the biggest win, the biggest loss, the most traded, and any row that looks unusual. Read the entry price against the result, timing (usd_share_first_tenth near zero with a high usd_share_last_tenth marks a late piler), hold_seconds, the size distribution, and sides (both tokens bought: a hedger or market maker; sell-dominated flow: a split-seller).
5. Verdict, in a few sentences with numbers: the style (early conviction, late piler, scalper, market maker, split-seller…), the edge or its absence, how consistent it is, the risks, and whether to follow them.
6. Optional: to compare, list_skilled_traders(by=edge) shows where the trader stands among wallets with enough resolved markets, and finds others worth cracking.
7. Optional: a chart of one revealing market (get_market_events with a small points, about 60 to 120) or of the profit curve (get_pnl_series). A client that draws MCP Apps shows that chart by itself right after the call. Otherwise, to hand it to the person: get_chart_template (kind market for get_market_events, kind equity for get_pnl_series; theme night or day), replace __DATA__ with that answer's JSON (escape <, > and & as \\u003c, \\u003e, \\u0026), save it as a .html file and give its path; if you cannot write files, describe the shape.

Interpretation rules:
- The one profit to quote for the trader is upstream.pnl from the card (the provider's model: realized plus unrealized, full account history). Never add up per-market pnl_usd into a total. If upstream is {"status": "upstream_offline"}, say the headline figure is unavailable (the provider is down, or has never reported on this wallet) and use card.career_pnl_usd (realized, archive) with that caveat. card.coverage.eras says which exchange eras the card's statistics count: a trader of another era shows zeros there, not a lack of trading.
- A resolved market's pnl_usd is a result. An open market's pnl_usd is cash flow (money deployed counts as spent), not a loss: its standing is pnl_marked_usd.
- pnl_usd includes split, merge and redemption legs that never appear as fills: it cannot be rebuilt from fills.
- roi is meaningless for split-sellers (sell-dominated flow): judge them by pnl_usd.
- Prices are UP-normalized, 0 to 1 (the probability of token 1); a token-2 trade paid 1 - price.
- A call that comes back with isError carries a message written for a human: relay it. depth_gated and wallet_quota are plan walls (do not retry); daily_limit and monthly_limit mean the budget is spent (stop); rate_limited, busy and overloaded are transient (wait retry_after seconds, then retry).`;
}

export function registerPrompts(server: McpServer, config: Config): void {
  server.registerPrompt(
    CRACK_THIS_TRADER,
    {
      title: 'Crack this trader',
      description:
        "A guided investigation of one trader: plan and budget, career card, ranked markets, the revealing few markets' statistics, a verdict, an optional chart; with the rules for which profit figure to quote.",
      argsSchema: z.object({
        trader: z
          .string()
          .max(ARGUMENT_MAX_CHARS)
          .describe('The trader: a 0x wallet, a profile URL of the upstream provider, or a display name.'),
      }),
    },
    ({ trader }) => ({
      description: `Investigate ${trader}`,
      messages: [{ role: 'user', content: { type: 'text', text: crackThisTraderText(config, trader) } }],
    }),
  );
}
