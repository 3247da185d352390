/**
 * When a block is final, as the archive decides it: by the node's `finalized` block (Polygon's milestones
 * finalize a block within seconds, and a finalized block is never reorganized), or, where the node does not
 * know the tag (or ARCHIVE_FINALIZED=false), by a depth of ARCHIVE_CONFIRMATIONS below the head. The mode is
 * probed once at start and said three ways: the `archive finality` log line, `/readyz` (`archive_finality`)
 * and the `trader_analytics_archive_finality{mode}` gauge. Both stages (final and head) read it from here.
 */
import type { ArchiveConfig } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import { noteReadiness } from '../../../metrics/progress.ts';
import { recordArchiveFinality } from '../../../metrics/registry.ts';
import type { BlockHeader, PolygonRpc } from './rpc.ts';

export type FinalityMode = 'finalized' | 'confirmations';

/** The newest final block: its number, and its hash when the node named it (the finalized tag does). */
export interface FinalBlock {
  number: number;
  hash: string | null;
}

export class Finality {
  #mode: FinalityMode;

  constructor(
    private readonly config: Pick<ArchiveConfig, 'finalized' | 'confirmations'>,
    private readonly rpc: Pick<PolygonRpc, 'finalizedHeader'>,
    private readonly log: Logger,
  ) {
    this.#mode = config.finalized ? 'finalized' : 'confirmations';
  }

  get mode(): FinalityMode {
    return this.#mode;
  }

  /** Asks the node once whether it knows the `finalized` tag, and says which mode the archive runs in. */
  async probe(): Promise<void> {
    if (this.config.finalized && (await this.rpc.finalizedHeader()) === null) this.#fallBack();
    else this.#announce(this.config.finalized ? 'the node names its finalized block' : 'ARCHIVE_FINALIZED=false');
  }

  /** The newest final block, given the head the caller read. */
  async final(head: number): Promise<FinalBlock> {
    if (this.#mode === 'finalized') {
      const header: BlockHeader | null = await this.rpc.finalizedHeader();
      if (header !== null) return { number: Math.min(header.number, head), hash: header.hash };
      this.#fallBack();
    }
    return { number: Math.max(0, head - this.config.confirmations), hash: null };
  }

  #fallBack(): void {
    this.#mode = 'confirmations';
    this.#announce('the node does not know the finalized tag');
  }

  #announce(why: string): void {
    const mode = this.#mode;
    const note =
      mode === 'finalized'
        ? "finalized: blocks up to the node's finalized block are final"
        : `confirmations: blocks ${this.config.confirmations} below the head are final (${why})`;
    recordArchiveFinality(mode);
    noteReadiness('archive_finality', note);
    const fields = { finality: mode, confirmations: this.config.confirmations, why };
    if (mode === 'confirmations' && this.config.finalized)
      this.log.warn(fields, `archive finality: ${note}; a reorg deeper than that stops the archive`);
    else this.log.info(fields, `archive finality: ${note}`);
  }
}
