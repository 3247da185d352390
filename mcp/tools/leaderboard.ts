/** list_skilled_traders (REST `/leaderboard`). */
import { leaderboardQuerySchema, leaderboardSchema, listSkilledTraders } from '../../operations/leaderboard.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe } from './arguments.ts';

export function leaderboardTools(): Tool[] {
  return [
    defineTool({
      name: 'list_skilled_traders',
      title: 'Traders ranked by skill',
      description: describe(
        'Find traders worth studying: wallets with enough resolved markets (min_markets) ranked by by=edge (default: the edge shrunk by its evidence), calibration (Brier score, lowest first) or pnl, over window=all|90d|30d|7d; {traders, next_cursor} (pass next_cursor back as cursor). as_of (epoch seconds) ranks as known then (for backtests: no later resolution counts). Each trader carries luck_probability, its q_value over everyone the window ranks and distinguishable_from_luck (at false_discovery_rate); distinguishable_from_luck=true keeps only those told from luck. Pass a wallet to get_trader_skill or crack_this_trader next.',
        COST,
      ),
      input: leaderboardQuerySchema,
      output: leaderboardSchema,
      traderScoped: false,
      run: (context, _call, query) => listSkilledTraders(context, query),
    }),
  ];
}
