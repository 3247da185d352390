/** whoami (REST `/me`). */
import { z } from 'zod';
import { meSchema, whoami } from '../../operations/me.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe } from './arguments.ts';

export function meTools(): Tool[] {
  return [
    defineTool({
      name: 'whoami',
      title: 'Your plan, limits and usage',
      description: describe(
        "The caller's plan, its limits (rate, burst, per-minute ceiling, daily or monthly calls, history_depth: -1 means unlimited) and usage: usage.day on Basic (a daily cap), usage.month on Pro and Max (a monthly cap), plus the rate bucket. The authoritative statement of your real numbers: do not assume a tier.",
        COST,
      ),
      input: z.object({}),
      output: meSchema,
      traderScoped: false,
      run: (context, call) => whoami(context, call),
    }),
  ];
}
