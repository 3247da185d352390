/** The whoami operation (REST `GET /me`, MCP whoami): the caller's plan, its limits, usage, and the calling key's label and last four characters. */
import { z } from 'zod';
import type { Caller } from './auth.ts';
import type { Call, RouteContext } from './context.ts';
import type { UsageReport } from './gates/budget.ts';
import { readLibraryUsage } from '../projections/tapes.ts';
import { outsideSlots } from './gates/store-slot.ts';

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
    records_live: z.boolean().meta({
      description: "Whether the plan's live watches are saved into its library (Pro and Max: auto-save; Basic: no).",
    }),
    library_bytes: z.int().meta({
      description: "The library's storage: the bytes its tapes may take (as usage.library.bytes_used counts them).",
    }),
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
    library: z
      .object({
        tapes: z.int().meta({ description: 'Tapes in the library (GET /tapes), recordings still running included.' }),
        bytes_used: z.int().meta({
          description:
            "Bytes the tapes take (the sum of their size_bytes), of limits.library_bytes. A full library records no more watches; the live plane says so on the watch's ack.",
        }),
      })
      .meta({ description: 'The library of recorded watches (tapes).' }),
  }),
  key: z.object({
    label: z.string(),
    last4: z.string().meta({ description: 'Last four characters of the calling key.' }),
  }),
});
export type Me = z.infer<typeof meSchema>;

function readMe(caller: Caller, usage: UsageReport, slotsInUse: number, library: { tapes: number; bytes: number }): Me {
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
      records_live: limits.recordsLive,
      library_bytes: limits.libraryBytes,
    },
    usage: {
      ...usage,
      live: { slots_in_use: slotsInUse },
      library: { tapes: library.tapes, bytes_used: library.bytes },
    },
    key: { label: caller.label, last4: caller.last4 },
  };
}

/**
 * whoami: the usage numbers are the gates' answer to this very call (no second round trip); the slots are
 * the slot store's; the library's figures are its tapes' in the store.
 */
export async function whoami(context: RouteContext, call: Call): Promise<Me> {
  const [slotsInUse, library] = await Promise.all([
    context.liveSlotsInUse?.(call.caller.accountId) ?? 0,
    // One small aggregate, read outside the call's slot: /me answers under overload, as its budget does.
    outsideSlots(() => readLibraryUsage(context.store, call.caller.accountId)),
  ]);
  return readMe(call.caller, call.admitted.usage, slotsInUse, library);
}
