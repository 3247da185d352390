import { describe, expect, it } from 'vitest';
import { POLYMARKET_V1_FIRST_BLOCK } from '../chain.ts';
import { coverageOf, v1Indexed, type ArchiveRange } from './coverage.ts';

/** Facts of the chain, stated here: the CTF Exchange's deployment block (Polymarket's subgraph) and the cut-over. */
const V1_DEPLOYED = 33_605_403;
const CUT_OVER = Date.UTC(2026, 3, 28, 11, 15) / 1000;
const V2_DEPLOYED = 84_902_353;

const range = (source: string, startBlock: number | null, block: number, blockTs: number | null): ArchiveRange => ({
  source,
  startBlock,
  block,
  blockTs,
});

describe('v1Indexed', () => {
  it('starts the V1 era at the first V1 exchange deployment', () => {
    expect(POLYMARKET_V1_FIRST_BLOCK).toBe(V1_DEPLOYED);
  });

  it('is false without an archive, and for one that started at the V2 exchanges', () => {
    expect(v1Indexed([], V1_DEPLOYED, CUT_OVER)).toBe(false);
    expect(
      v1Indexed([range('live', V2_DEPLOYED, V2_DEPLOYED + 5_000_000, CUT_OVER + 86_400)], V1_DEPLOYED, CUT_OVER),
    ).toBe(false);
  });

  it('is true for one source from the deployment (or before) to a block at or after the cut-over', () => {
    expect(v1Indexed([range('live', V1_DEPLOYED, 90_000_000, CUT_OVER)], V1_DEPLOYED, CUT_OVER)).toBe(true);
    expect(v1Indexed([range('live', 0, 90_000_000, CUT_OVER + 1)], V1_DEPLOYED, CUT_OVER)).toBe(true);
  });

  it('is false while the backfill is under way, or when it started one block late', () => {
    expect(v1Indexed([range('live', V1_DEPLOYED, 80_000_000, CUT_OVER - 1)], V1_DEPLOYED, CUT_OVER)).toBe(false);
    expect(v1Indexed([range('live', V1_DEPLOYED + 1, 90_000_000, CUT_OVER + 1)], V1_DEPLOYED, CUT_OVER)).toBe(false);
  });

  it('joins sources that touch or overlap, in any order; a gap between them is not coverage', () => {
    const backfill = range('v1', V1_DEPLOYED, V2_DEPLOYED - 1, CUT_OVER - 1000);
    const live = range('live', V2_DEPLOYED, V2_DEPLOYED + 5_000_000, CUT_OVER + 86_400);
    expect(v1Indexed([live, backfill], V1_DEPLOYED, CUT_OVER)).toBe(true);
    expect(v1Indexed([live, { ...backfill, block: V2_DEPLOYED + 10 }], V1_DEPLOYED, CUT_OVER)).toBe(true);
    expect(v1Indexed([live, { ...backfill, block: V2_DEPLOYED - 2 }], V1_DEPLOYED, CUT_OVER)).toBe(false);
  });

  it('claims nothing for a checkpoint that never recorded its start or its time', () => {
    expect(v1Indexed([range('old', null, 90_000_000, CUT_OVER + 1)], V1_DEPLOYED, CUT_OVER)).toBe(false);
    expect(v1Indexed([range('old', V1_DEPLOYED, 90_000_000, null)], V1_DEPLOYED, CUT_OVER)).toBe(false);
  });
});

describe('coverageOf', () => {
  it('lists V1 when the archive has it or the operator includes it, and always V2', () => {
    expect(coverageOf(false, false, CUT_OVER)).toEqual({ eras: ['v2'], v2_start_ts: CUT_OVER });
    expect(coverageOf(false, true, CUT_OVER)).toEqual({ eras: ['v1', 'v2'], v2_start_ts: CUT_OVER });
    expect(coverageOf(true, false, CUT_OVER)).toEqual({ eras: ['v1', 'v2'], v2_start_ts: CUT_OVER });
  });
});
