/** get_trader_card (REST `/traders/{trader}`). */
import { z } from 'zod';
import { cardQuerySchema, getTraderCard } from '../../operations/traders.ts';
import type { Config } from '../../config.ts';
import { traderCardSchema } from '../../projections/cards.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe, traderArgument, walletCapNote } from './arguments.ts';

export function traderTools(config: Config): Tool[] {
  return [
    defineTool({
      name: 'get_trader_card',
      title: "A trader's career card",
      description: describe(
        "A trader's career card: trader (canonical wallet and name), card (archive statistics: markets, resolved, winrate, volume, first and last seen, avg_entry_price = the break-even winrate, avg_win_usd, avg_loss_usd, open value) and upstream (the provider's own figures).",
        'Quote upstream.pnl as the trader\'s profit (the provider\'s model: realized plus unrealized, full history); never add up per-market pnl_usd. When upstream is {status: "upstream_offline"}, say the headline figure is unavailable; only then does card carry career_pnl_usd (realized) and pnl_marked_usd as fallbacks.',
        'A valid but unknown wallet returns a zeroed card. The smallest answer about a trader: start here. as_of (epoch seconds) answers as the service knew the trader then (for backtests that must not see the future).',
        COST,
        walletCapNote(config),
      ),
      input: z.object({ trader: traderArgument, ...cardQuerySchema.shape }),
      output: traderCardSchema,
      traderScoped: true,
      run: (context, call, { trader: _trader, ...query }) => getTraderCard(context, call, query),
    }),
  ];
}
