/**
 * Which exchange eras the card's statistics cover. The V2 era always; the V1 era once the archive has
 * indexed it whole (from the first V1 exchange's deployment to the cut-over), or when the operator says it
 * is in (`CARD_INCLUDE_V1`: imports, which no checkpoint records). Said on the card, so that a card of
 * zeros for a trader of the V1 era is never a mystery.
 */
import { z } from 'zod';
import type { Store } from './store.ts';

const CARD_ERAS = ['v1', 'v2'] as const;
export type CardEra = (typeof CARD_ERAS)[number];

export const coverageSchema = z
  .object({
    eras: z.array(z.enum(CARD_ERAS)).meta({
      description:
        "The exchange eras the card's statistics count: v2 always; v1 once the on-chain archive has indexed the V1 exchanges from their deployment to the cut-over (or the operator included it). Markets of an era not listed are not counted, though the markets list and fills show them.",
    }),
    v2_start_ts: z.int().min(0).meta({
      description: 'The V1 → V2 exchange cut-over (epoch seconds): the V1 era is everything before it.',
    }),
  })
  .meta({ description: 'What the card statistics cover.' });
export type Coverage = z.infer<typeof coverageSchema>;

/** One archive source's indexed range: from its start block to its checkpoint, and that block's time. */
export interface ArchiveRange {
  source: string;
  /** Null: not recorded (a checkpoint written before the start was kept). */
  startBlock: number | null;
  block: number;
  /** The checkpoint block's time (epoch seconds); null when not recorded. */
  blockTs: number | null;
}

/**
 * Each source's newest checkpoint, by the newest block of its key without FINAL (a ReplacingMergeTree on
 * the block: the largest block is the last version).
 */
const READ_ARCHIVE_RANGES = `
SELECT source, max(block) AS last_block, argMax(start_block, block) AS first_block, argMax(block_ts, block) AS last_ts
FROM {db:Identifier}.archive_checkpoints
GROUP BY source
ORDER BY source`;

export async function readArchiveRanges(store: Store): Promise<ArchiveRange[]> {
  const rows = await store.query<{
    source: string;
    last_block: string | number;
    first_block: string | number | null;
    last_ts: number | null;
  }>(READ_ARCHIVE_RANGES);
  return rows.map((row) => ({
    source: row.source,
    startBlock: row.first_block === null ? null : Number(row.first_block),
    block: Number(row.last_block),
    blockTs: row.last_ts,
  }));
}

/**
 * True when the archive's ranges, joined where they touch, cover one stretch from `v1FirstBlock` to a block
 * at or after the cut-over: several sources may share the work (a V1 backfill beside the live archive).
 */
export function v1Indexed(ranges: readonly ArchiveRange[], v1FirstBlock: number, v2StartTs: number): boolean {
  const known = ranges
    .filter((range): range is ArchiveRange & { startBlock: number } => range.startBlock !== null)
    .filter((range) => range.block >= range.startBlock)
    .sort((a, b) => a.startBlock - b.startBlock);
  let reach: { block: number; ts: number | null } | null = null;
  for (const range of known) {
    if (reach === null) {
      if (range.startBlock > v1FirstBlock) return false;
      reach = { block: range.block, ts: range.blockTs };
    } else if (range.startBlock > reach.block + 1) break;
    else if (range.block > reach.block) reach = { block: range.block, ts: range.blockTs };
    if (reach.block >= v1FirstBlock && reach.ts !== null && reach.ts >= v2StartTs) return true;
  }
  return false;
}

/** The card's eras: V1 when the operator includes it or the archive has indexed it whole. */
export function coverageOf(includeV1: boolean, indexed: boolean, v2StartTs: number): Coverage {
  const eras: CardEra[] = includeV1 || indexed ? ['v1', 'v2'] : ['v2'];
  return { eras, v2_start_ts: v2StartTs };
}
