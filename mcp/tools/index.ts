/**
 * The tools of read-api.md's tool table that exist today, in its order. get_chart_template,
 * list_tapes, get_tape_summary and get_tape_events come with their own issues.
 */
import type { Config } from '../../config.ts';
import type { Tool } from '../tool.ts';
import { chartTools } from './charts.ts';
import { equityTools } from './equity.ts';
import { fillTools } from './fills.ts';
import { marketTools } from './markets.ts';
import { meTools } from './me.ts';
import { popularTools } from './popular.ts';
import { priceTools } from './prices.ts';
import { leaderboardTools } from './leaderboard.ts';
import { skillTools } from './skill.ts';
import { traderTools } from './traders.ts';
import { tapeTools } from './tapes.ts';

export function buildTools(config: Config): Tool[] {
  return [
    ...meTools(),
    ...popularTools(config),
    ...traderTools(config),
    ...skillTools(config),
    ...leaderboardTools(),
    ...marketTools(config),
    ...priceTools(config),
    ...equityTools(config),
    ...fillTools(config),
    ...chartTools(config),
    ...tapeTools(config),
  ];
}
