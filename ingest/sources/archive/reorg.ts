/**
 * A reorg deeper than the archive's confirmations, and how the archive tells one: a published block whose
 * hash the node no longer has, or a range whose logs and headers keep naming different hashes for a block.
 */
import type { RawLog } from './decode.ts';
import type { BlockHeader } from './rpc.ts';

/**
 * Blocks the archive published were replaced on chain (a reorg deeper than ARCHIVE_CONFIRMATIONS). The
 * archive stops: their events are already ingested, and publishing the new chain's on top would count both.
 */
export class ArchiveReorgError extends Error {
  constructor(
    /** The published block whose hash the node no longer has (unsettled: the block the node names two hashes for). */
    readonly block: number,
    /** The hash the archive published the block with (unsettled: the hash the node's logs name). */
    readonly publishedHash: string,
    /** The block's hash in the node's header. */
    readonly nodeHash: string,
    /** The newest published block the node still agrees with (null: none in the window). */
    readonly commonAncestor: number | null,
    /**
     * replaced: a published block has a new hash. unsettled: below the safe head, the node's logs and headers
     * kept naming different hashes for a block over several reads of its range (nothing of it was published).
     */
    readonly kind: 'replaced' | 'unsettled' = 'replaced',
    reads = 0,
  ) {
    const agree =
      commonAncestor === null
        ? 'no common block within the checkpoint window'
        : `the chains agree up to block ${commonAncestor} at least`;
    super(
      kind === 'replaced'
        ? `reorg deeper than the confirmations: block ${block} was published with hash ${publishedHash}, the node now has ${nodeHash}; ${agree}` +
            `. Events of blocks after ${commonAncestor ?? '(unknown)'} up to ${block} may be from the replaced chain and are already ingested; the archive stops.`
        : `reorg deeper than the confirmations: block ${block} is below the safe head, yet over ${reads} reads the node's logs name its hash ${publishedHash} and its header ${nodeHash}; ${agree}` +
            `. Nothing of block ${block} was published; the chain is still being replaced there, and the archive stops rather than guess which side stays.`,
    );
  }
}

/** Reads of one range whose logs and headers disagree on a block hash, before the archive treats it as a reorg. */
export const UNSETTLED_READS = 4;

export interface Disagreement {
  block: number;
  logsHash: string;
  headerHash: string;
}

/** A log that names its block's hash and disagrees with the header read for that block (the range's ends). */
export function disagreementOf(fetched: {
  logs: readonly RawLog[];
  first: BlockHeader;
  last: BlockHeader;
}): Disagreement | null {
  for (const log of fetched.logs) {
    if (log.blockHash === undefined) continue;
    const block = Number(log.blockNumber);
    const header = block === fetched.first.number ? fetched.first : block === fetched.last.number ? fetched.last : null;
    if (header !== null && log.blockHash.toLowerCase() !== header.hash.toLowerCase())
      return { block, logsHash: log.blockHash.toLowerCase(), headerHash: header.hash.toLowerCase() };
  }
  return null;
}
