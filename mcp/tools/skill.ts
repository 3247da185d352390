/** get_trader_skill (REST `/traders/{trader}/skill`). */
import { z } from 'zod';
import type { Config } from '../../config.ts';
import { getTraderSkill, skillQuerySchema, traderSkillSchema } from '../../operations/skill.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe, listDepthNote, traderArgument, walletCapNote } from './arguments.ts';

export function skillTools(config: Config): Tool[] {
  return [
    defineTool({
      name: 'get_trader_skill',
      title: 'Is a trader good, or lucky',
      description: describe(
        "Over a trader's resolved markets with entries: edge.per_dollar (realized return per dollar above what the entry prices implied, net of fees; losers held to the resolution count), edge.interval_90 and edge.shrunk (the edge weighed by its evidence: quote shrunk when comparing traders), held_to_resolution and sold_before_resolution apart, calibration (Brier score of the entry prices with reliability, resolution and a table by price bucket) and rank.percentile among wallets with enough resolved markets.",
        'A wide interval or a null percentile means too few resolved markets to tell skill from luck: say so. as_of (epoch seconds) answers as known then (for backtests).',
        COST,
        walletCapNote(config),
        listDepthNote(config, 'the answer weighs'),
      ),
      input: z.object({ trader: traderArgument, ...skillQuerySchema.shape }),
      output: traderSkillSchema,
      traderScoped: true,
      run: (context, call, { trader: _trader, ...query }) => getTraderSkill(context, call, query),
    }),
  ];
}
