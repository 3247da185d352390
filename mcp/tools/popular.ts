/** list_popular_traders (REST `/popular`). */
import { z } from 'zod';
import { listPopularTraders, popularSchema } from '../../operations/popular.ts';
import type { Config } from '../../config.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe } from './arguments.ts';

export function popularTools(config: Config): Tool[] {
  return [
    defineTool({
      name: 'list_popular_traders',
      title: 'Popular traders',
      description: describe(
        `The curated shelf: up to ${config.api.popularLimit} traders, those of the upstream provider's leaderboard and those with live watchers now, most watched first, then by leaderboard rank ({traders: [{wallet, name, watching}], count}). A starting point when no trader is named.`,
        COST,
        'Reads no trader: it never counts toward a distinct-trader cap.',
      ),
      input: z.object({}),
      output: popularSchema,
      traderScoped: false,
      run: (context) => listPopularTraders(context),
    }),
  ];
}
