/** get_recent_fills (REST `/traders/{trader}/fills`). */
import { z } from 'zod';
import { fillsPageSchema, fillsQuerySchema, getRecentFills } from '../../operations/fills.ts';
import type { Config } from '../../config.ts';
import { defineTool, type Tool } from '../tool.ts';
import { describe, listDepthNote, traderArgument, walletCapNote } from './arguments.ts';

export function fillTools(config: Config): Tool[] {
  const { fills } = config.api;
  return [
    defineTool({
      name: 'get_recent_fills',
      title: "A trader's recent fills across markets",
      description: describe(
        "A trader's fills across markets, oldest first, from since (epoch seconds, inclusive): the monitoring primitive ({fills, next_cursor}; each fill names its market by condition_id and title). To poll, pass the last fill's ts as since (that second comes again: de-duplicate), or follow next_cursor. Freshness tracks the archive pipeline (minutes).",
        `A full page (default ${fills.defaultLimit} fills) is 10 to 15 thousand tokens: pass a small limit and a recent since.`,
        'Costs 1 request per page (whoami shows what is left).',
        walletCapNote(config),
        listDepthNote(config, 'fills come from'),
      ),
      input: z.object({ trader: traderArgument, ...fillsQuerySchema(config).shape }),
      output: fillsPageSchema,
      traderScoped: true,
      run: (context, call, { trader: _trader, ...query }) => getRecentFills(context, call, query),
    }),
  ];
}
