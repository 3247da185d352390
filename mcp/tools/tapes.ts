/** list_tapes, get_tape_summary, get_tape_events (REST `/tapes`, `/tapes/{tape_id}`, `/tapes/{tape_id}/events`). */
import { z } from 'zod';
import {
  getTapeEvents,
  getTapeSummary,
  listTapes,
  tapeEventsPageSchema,
  tapeEventsQuerySchema,
  tapeListSchema,
  tapeOneSchema,
  tapeParamsSchema,
  tapeWalletQuerySchema,
} from '../../operations/tapes.ts';
import type { Config } from '../../config.ts';
import { STREAM_EVENT_TYPES } from '../../projections/tapes.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe } from './arguments.ts';

const PRIVATE =
  "Tapes are your own recorded sessions: another account's tape and an unknown id are the same tape_not_found. Not a trader lookup: never counts toward the distinct-trader cap.";
const tapeIdArgument = tapeParamsSchema.shape.tape_id.meta({ description: 'A tape id from list_tapes.' });

export function tapeTools(config: Config): Tool[] {
  const { events } = config.tapes;
  return [
    defineTool({
      name: 'list_tapes',
      title: 'Your recorded sessions (tapes)',
      description: describe(
        "Your library of recorded watch sessions, newest first ({tapes, count}; count 0 for an empty library): market, grade (A..F), pnl_taped_usd (observed during the recording, not the trader's career profit), outcome, duration, tick and fill counts. wallet narrows to one trader.",
        COST,
        PRIVATE,
      ),
      input: tapeWalletQuerySchema(config),
      output: tapeListSchema,
      traderScoped: false,
      run: (context, call, args) => listTapes(context, call, args),
    }),
    defineTool({
      name: 'get_tape_summary',
      title: "One tape's metadata",
      description: describe(
        'The metadata ({tape}) of one of your recorded sessions, by its tape_id from list_tapes.',
        COST,
        PRIVATE,
      ),
      input: z.object({ tape_id: tapeIdArgument }),
      output: tapeOneSchema,
      traderScoped: false,
      run: (context, call, args) => getTapeSummary(context, call, args),
    }),
    defineTool({
      name: 'get_tape_events',
      title: "A tape's StreamEvents, in pages",
      description: describe(
        `One page ({tape_id, events, next_cursor}) of a tape's StreamEvents {type, ts, ...payload} in replay order; follow next_cursor until null. Types: ${STREAM_EVENT_TYPES.join(', ')}; book and trade events form the price line (UP space, 0 to 1), each fill is a marker at (ts, price) sized by usd. Pass types (e.g. fill) and a small limit to keep answers short (default ${events.defaultLimit}, at most ${events.maxLimit}).`,
        `Costs 1 request per page and is a heavy read (busy: retry in about a second). A tape of more than ${config.tapes.maxEvents.toLocaleString('en-US')} events is refused with tape_too_large (download it over REST).`,
        PRIVATE,
      ),
      input: z.object({ tape_id: tapeIdArgument, ...tapeEventsQuerySchema(config).shape }),
      output: tapeEventsPageSchema,
      traderScoped: false,
      heavy: true,
      run: (context, call, args) => getTapeEvents(context, call, args),
    }),
  ];
}
