/**
 * How the archive's head blocks ended (migration 0023, 0024): what the live plane answers a client that
 * resumes the provisional events a previous connection (or a previous plane) left open.
 */
import type { Store } from './store.ts';

/** One head block: its number, full hash, and its end (null: still open, or resolved before ends were kept). */
export interface HeadBlockEnd {
  block: number;
  hash: string;
  state: 'final' | 'retracted' | null;
}

/** Every row of some blocks, each (block, hash) once with its latest version. */
const READ_HEAD_BLOCK_ENDS = `
SELECT block, block_hash, argMax(state, resolved) AS state
FROM {db:Identifier}.head_blocks
WHERE block IN {blocks:Array(UInt64)}
GROUP BY block, block_hash`;

/** The head blocks the archive published events of, at these numbers (every source's, every hash). */
export async function readHeadBlockEnds(store: Store, blocks: readonly number[]): Promise<HeadBlockEnd[]> {
  const unique = [...new Set(blocks)];
  if (unique.length === 0) return [];
  const rows = await store.query<{ block: string | number; block_hash: string; state: string }>(READ_HEAD_BLOCK_ENDS, {
    blocks: unique,
  });
  return rows.map((row) => ({
    block: Number(row.block),
    hash: row.block_hash,
    state: row.state === 'final' || row.state === 'retracted' ? row.state : null,
  }));
}
