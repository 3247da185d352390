/** The whoami operation (REST `GET /me`, MCP whoami): the caller's plan, its limits, usage, and the calling key's label and last four characters. */
import { z } from 'zod';
import type { Caller } from './auth.ts';
import type { Call, RouteContext } from './context.ts';
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
    live: z
      .object({
        slots_in_use: z.int().meta({
          description:
            'Live slots held now (watches on the WebSocket plane, every key and connection of the user), of limits.live_slots. Streams consume no calls.',
        }),
      })
      .meta({ description: 'The live plane (docs/live.md): slots, not calls, meter it.' }),
  }),
  key: z.object({
    label: z.string(),
    last4: z.string().meta({ description: 'Last four characters of the calling key.' }),
  }),
});
export type Me = z.infer<typeof meSchema>;

function readMe(caller: Caller, usage: UsageReport, slotsInUse: number): Me {
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
    usage: { ...usage, live: { slots_in_use: slotsInUse } },
    key: { label: caller.label, last4: caller.last4 },
  };
}

/** whoami: the usage numbers are the gates' answer to this very call (no second round trip); the slots are the slot store's. */
export async function whoami(context: RouteContext, call: Call): Promise<Me> {
  const slotsInUse = (await context.liveSlotsInUse?.(call.caller.accountId)) ?? 0;
  return readMe(call.caller, call.admitted.usage, slotsInUse);
}
