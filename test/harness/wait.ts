/**
 * Waiting on events, never on time: helpers resolve when the pipeline reports the batches a test
 * expects.
 */
import type { BatchIngested, IngestPipeline } from '../../ingest/pipeline.ts';

/**
 * Resolves once the pipelines together have reported `expected` events (valid or dead-lettered) on
 * topics accepted by `topicFilter`. Attach it before producing.
 */
export function waitForIngested(
  pipelines: readonly IngestPipeline[],
  expected: number,
  topicFilter: (topic: string) => boolean = () => true,
): Promise<number> {
  return new Promise((resolve) => {
    let seen = 0;
    const listeners: [IngestPipeline, (batch: BatchIngested) => void][] = [];
    const done = () => {
      for (const [pipeline, listener] of listeners) pipeline.events.off('batch', listener);
      resolve(seen);
    };
    for (const pipeline of pipelines) {
      const listener = (batch: BatchIngested) => {
        if (!topicFilter(batch.topic)) return;
        seen += batch.valid + batch.deadLetters;
        if (seen >= expected) done();
      };
      listeners.push([pipeline, listener]);
      pipeline.events.on('batch', listener);
    }
    if (expected <= 0) done();
  });
}
