/**
 * The archive's durable checkpoint (docs/archive.md, "Resumable and reorg-safe"): the last block whose
 * events are all durable, its hash, and a window of recent range ends, so that a restart resumes after it
 * and finds a reorg that happened while it was away.
 */
import { BACKGROUND_READ, type Store } from '../../../projections/store.ts';

/** A block the archive published, by number and hash (and its time, while the archive still holds it). */
export interface BlockRef {
  block: number;
  hash: string;
  ts?: number;
}

/** The durable checkpoint: the last block whose events are all durable, its hash, and recent range ends. */
export interface Checkpoint extends BlockRef {
  /** Oldest first; the checkpoint block itself is the last entry when its hash is known. */
  recent: BlockRef[];
  /**
   * The block this source started from, and the checkpoint block's time: what it has indexed, for the card's
   * coverage (projections/coverage.ts). Null when not known (a checkpoint written before they were kept).
   */
  startBlock: number | null;
  blockTs: number | null;
}

export async function readCheckpoint(store: Store, source: string): Promise<Checkpoint | null> {
  const [row] = await store.query<{
    block: string | number;
    block_hash: string;
    recent_blocks: Array<string | number>;
    recent_hashes: string[];
    start_block: string | number | null;
    block_ts: number | null;
  }>(
    'SELECT block, block_hash, recent_blocks, recent_hashes, start_block, block_ts FROM {db:Identifier}.archive_checkpoints FINAL WHERE source = {source:String} ORDER BY block DESC LIMIT 1',
    { source },
    BACKGROUND_READ,
  );
  if (row === undefined) return null;
  const recent = row.recent_blocks
    .map((block, index) => ({ block: Number(block), hash: row.recent_hashes[index] ?? '' }))
    .filter((ref) => ref.hash !== '');
  return {
    block: Number(row.block),
    hash: row.block_hash,
    recent,
    startBlock: row.start_block === null ? null : Number(row.start_block),
    blockTs: row.block_ts,
  };
}

export async function writeCheckpoint(store: Store, source: string, checkpoint: Checkpoint): Promise<void> {
  await store.insert(
    'archive_checkpoints',
    [
      {
        source,
        block: checkpoint.block,
        block_hash: checkpoint.hash,
        recent_blocks: checkpoint.recent.map((ref) => ref.block),
        recent_hashes: checkpoint.recent.map((ref) => ref.hash),
        start_block: checkpoint.startBlock,
        block_ts: checkpoint.blockTs,
      },
    ],
    `archive-checkpoint-${source}-${checkpoint.block}-${checkpoint.hash}`,
  );
}
