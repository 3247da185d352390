/**
 * The chain's head, provisional: what the archive's head stage read in blocks above the final one, and how
 * each such block ended. One topic (`chain.head`), keyed by the archive's source, so one partition holds it
 * in order: a mark never overtakes the events it resolves. It is not in the topic registry on purpose:
 * ingest never reads it, and nothing provisional is stored in a projection; the live plane reads it.
 *
 * - `fill`, `trade`, `leg`: an event of a block above the final one, exactly as the final stage will publish
 *   it if the block stays, with the block (number, hash, time) and a `ref` naming it until it is resolved;
 * - `mark`: the block (number, hash) ended `final` (it is the chain's, its events will come on the final
 *   topics with the same ids) or `retracted` (a reorg replaced it: its events never happened there).
 *
 * Every block the head stage published events of gets exactly one mark, across restarts: its (block, hash)
 * is written to the store (`head_blocks`) before its events are published, and marked resolved after its
 * mark is (docs/archive.md, "The head stage").
 */
import { z } from 'zod';
import { fillSchema, positionLegSchema, tradeSchema } from './events.ts';
import { epochSecondsSchema } from './primitives.ts';

/** The logical name of the topic (the deployment's prefix goes before it). */
export const HEAD_TOPIC = 'chain.head';

const blockFields = {
  block: z.number().int().min(0),
  block_hash: z.string().regex(/^0x[0-9a-f]{64}$/),
  block_ts: epochSecondsSchema,
  /** When the head stage first saw the block (epoch ms): where freshness is measured from. */
  seen_ms: z.number().min(0),
};
const ref = z.string().min(1).max(120);

export const headEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('fill'), ...blockFields, ref, fill: fillSchema }),
  z.object({ type: z.literal('trade'), ...blockFields, ref, trade: tradeSchema }),
  z.object({ type: z.literal('leg'), ...blockFields, ref, leg: positionLegSchema }),
  z.object({
    type: z.literal('mark'),
    ...blockFields,
    state: z.enum(['final', 'retracted']),
    /** The node's final block when the mark was made. */
    finalized: z.number().int().min(0),
  }),
]);
export type HeadEvent = z.output<typeof headEventSchema>;
export type HeadEventInput = z.input<typeof headEventSchema>;

/** The ref of a provisional event: its block, a prefix of the block's hash, and its place in the block's events. */
export function headRef(block: number, blockHash: string, index: number): string {
  return `${block}:${blockHash.slice(2, 18)}:${index}`;
}
