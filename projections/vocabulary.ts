/**
 * Names the projections share with the event contract (`ingest/contract/events.ts` builds its schemas
 * from them). They live here, beside the reads, because projections never import ingest: the contract
 * depends on the read model's vocabulary, not the other way round.
 */

/** Grades of a recorded session, A (best) to F. */
export const TAPE_GRADES = ['A', 'B', 'C', 'D', 'E', 'F'] as const;
export type TapeGrade = (typeof TAPE_GRADES)[number];

/** The StreamEvent kinds a tape replays (decisions.md, Stream events and tapes). */
export const STREAM_EVENT_TYPES = ['book', 'trade', 'fill', 'resolution', 'session', 'final', 'retracted'] as const;

/**
 * The rank of each fill source: of a fill's copies, the one with the highest rank is kept (fills and
 * fills_v2 are ReplacingMergeTree(source_rank); the reads choose the same copy). The archive reads the chain
 * itself, so its copy outranks the upstream provider's.
 */
export const FILL_SOURCE_RANK = { 'fills.archive': 2, 'fills.upstream': 1 } as const;

/** No copy outranks one of this rank: a copy of it is its fill's kept copy without looking for others. */
export const TOP_FILL_SOURCE_RANK: number = Math.max(...Object.values(FILL_SOURCE_RANK));

/**
 * Who says a market resolved: the stated sources (the chain's ConditionResolution, Gamma's closed market, the
 * CLOB feed's market_resolved, the simulator) and the one inference, from the market's redemptions (the
 * rollup refresh makes it where no resolution is stored; migration 0026). A stated resolution supersedes
 * an inferred one.
 */
export const RESOLUTION_SOURCES = ['chain', 'gamma', 'clob', 'simulator', 'redemptions'] as const;
export type ResolutionSource = (typeof RESOLUTION_SOURCES)[number];

/** The source of the resolutions inferred from redemptions. */
export const INFERRED_RESOLUTION_SOURCE = 'redemptions' satisfies ResolutionSource;
