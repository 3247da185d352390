/**
 * The plan ladder (read-api.md, Limits): every plan's limits, as `/me` states them and the gates enforce
 * them. test/plan-ladder states the same ladder as literals from the contract.
 */

export const PLAN_IDS = ['basic', 'pro', 'max'] as const;
export type PlanId = (typeof PLAN_IDS)[number];

/** The plan above this one (the upgrade a wall's message names), or null at the top of the ladder. */
export function nextPlan(plan: PlanId): PlanId | null {
  return PLAN_IDS[PLAN_IDS.indexOf(plan) + 1] ?? null;
}

/** An early-access founder seat resolves to Pro limits, whatever the plan says (read-api.md, Limits). */
export function effectivePlan(plan: string, founder: boolean): PlanId | null {
  if (!(PLAN_IDS as readonly string[]).includes(plan)) return null;
  return founder ? 'pro' : (plan as PlanId);
}

export interface PlanLimits {
  /** The plan's display name, as `/me` states it. */
  name: 'Basic Intelligence' | 'Pro Intelligence' | 'Max Intelligence';
  rps: number;
  burst: number;
  rpm: number;
  /** 0 when the daily window does not govern. */
  dailyRequests: number;
  /** 0 when the monthly window does not govern. */
  monthlyRequests: number;
  maxKeys: number;
  liveSlots: number;
  /**
   * Store lookups of the live plane per hour (docs/live.md, Bounds): its commands that read the store (a
   * display name resolved, a market checked, a watch's first fetch) draw on one bucket per user that holds
   * this many and refills at this many an hour. A command answered from the read caches costs none.
   */
  liveLookupsPerHour: number;
  /** Most-recent markets visible per trader; -1 means unlimited. */
  historyDepth: number;
  /** Distinct wallets per UTC day; -1 means unlimited. */
  distinctWalletsPerDay: number;
  heavyReadsInFlight: number;
  /** Whether the plan's watches are recorded into its library (read-api.md: "Record a live market"). */
  recordsLive: boolean;
  /** The library's storage: the recorded tapes' bytes (their events as the download's JSON lines). */
  libraryBytes: number;
}

export const PLANS: Readonly<Record<PlanId, PlanLimits>> = {
  basic: {
    name: 'Basic Intelligence',
    rps: 0.5,
    burst: 10,
    rpm: 30,
    dailyRequests: 50,
    monthlyRequests: 0,
    maxKeys: 1,
    liveSlots: 1,
    liveLookupsPerHour: 120,
    historyDepth: 5,
    distinctWalletsPerDay: 3,
    heavyReadsInFlight: 2,
    recordsLive: false,
    libraryBytes: 200 * 1024 * 1024,
  },
  pro: {
    name: 'Pro Intelligence',
    rps: 5,
    burst: 60,
    rpm: 300,
    dailyRequests: 0,
    monthlyRequests: 50_000,
    maxKeys: 3,
    liveSlots: 3,
    liveLookupsPerHour: 1200,
    historyDepth: -1,
    distinctWalletsPerDay: -1,
    heavyReadsInFlight: 4,
    recordsLive: true,
    libraryBytes: 2 * 1024 * 1024 * 1024,
  },
  max: {
    name: 'Max Intelligence',
    rps: 20,
    burst: 200,
    rpm: 1200,
    dailyRequests: 0,
    monthlyRequests: 300_000,
    maxKeys: 6,
    liveSlots: 5,
    liveLookupsPerHour: 6000,
    historyDepth: -1,
    distinctWalletsPerDay: -1,
    heavyReadsInFlight: 8,
    recordsLive: true,
    libraryBytes: 10 * 1024 * 1024 * 1024,
  },
};
