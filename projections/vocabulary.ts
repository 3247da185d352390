/**
 * Names the projections share with the event contract (`ingest/contract/events.ts` builds its schemas
 * from them). They live here, beside the reads, because projections never import ingest: the contract
 * depends on the read model's vocabulary, not the other way round.
 */

/** Grades of a recorded session, A (best) to F. */
export const TAPE_GRADES = ['A', 'B', 'C', 'D', 'E', 'F'] as const;

/** The StreamEvent kinds a tape replays (decisions.md, Stream events and tapes). */
export const STREAM_EVENT_TYPES = ['book', 'trade', 'fill', 'resolution', 'session'] as const;
