/** The whoami operation (REST `GET /me`, MCP whoami): the caller's plan, its limits, usage, and the calling key's label and last four characters. */
import { z } from 'zod';
import type { Caller } from './auth.ts';
import type { Call } from './context.ts';
import type { UsageReport } from './gates/budget.ts';

export const meSchema = z.object({
  plan: z.enum(['Basic Intelligence', 'Pro Intelligence', 'Max Intelligence']),
  limits: z.object({
    rps: z.number().meta({ description: 'Sustained requests per second (token bucket refill).' }),
    burst: z.int().meta({ description: 'Requests that may be sent at once (bucket size).' }),
    rpm: z.number().meta({ description: 'Rolling 60-second ceiling, burst spend included.' }),
    daily_requests: z
      .int()
      .meta({ description: 'Calls per UTC day; 0 when the daily window does not govern (Pro, Max).' }),
    monthly_requests: z
      .int()
      .meta({ description: 'Calls per calendar month; 0 when the monthly window does not govern (Basic).' }),
    max_keys: z.int(),
    live_slots: z.int(),
    history_depth: z.int().meta({ description: 'Most-recent markets visible per trader; -1 means unlimited.' }),
  }),
  usage: z.object({
    window: z.object({ tokens_remaining: z.number(), rpm_used: z.int() }),
    day: z.object({ requests: z.int(), cap: z.int() }),
    month: z.object({ requests: z.int(), cap: z.int() }),
  }),
  key: z.object({
    label: z.string(),
    last4: z.string().meta({ description: 'Last four characters of the calling key.' }),
  }),
});
export type Me = z.infer<typeof meSchema>;

function readMe(caller: Caller, usage: UsageReport): Me {
  const { limits } = caller;
  return {
    plan: limits.name,
    limits: {
      rps: limits.rps,
      burst: limits.burst,
      rpm: limits.rpm,
      daily_requests: limits.dailyRequests,
      monthly_requests: limits.monthlyRequests,
      max_keys: limits.maxKeys,
      live_slots: limits.liveSlots,
      history_depth: limits.historyDepth,
    },
    usage,
    key: { label: caller.label, last4: caller.last4 },
  };
}

/** whoami: the usage numbers are the gates' answer to this very call (no second round trip). */
export function whoami(call: Call): Me {
  return readMe(call.caller, call.admitted.usage);
}
