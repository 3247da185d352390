/**
 * Waiting on events, never on time: helpers resolve when the workers report the batches a test
 * expects, and their rollup refreshers have caught up.
 */
import type { BatchIngested } from '../../ingest/pipeline.ts';
import type { IngestWorker } from '../../ingest/worker.ts';

/**
 * Resolves once the workers together have reported `expected` events (valid or dead-lettered) on
 * topics accepted by `topicFilter`, committed, and recomputed the rollups they touched. Attach it
 * before producing.
 */
export function waitForIngested(
  workers: readonly IngestWorker[],
  expected: number,
  topicFilter: (topic: string) => boolean = () => true,
): Promise<number> {
  return new Promise((resolve) => {
    let seen = 0;
    const listeners: [IngestWorker, (batch: BatchIngested) => void][] = [];
    const done = () => {
      for (const [worker, listener] of listeners) worker.pipeline.events.off('batch', listener);
      void Promise.all(workers.map((worker) => worker.rollups.settled())).then(() => resolve(seen));
    };
    for (const worker of workers) {
      const listener = (batch: BatchIngested) => {
        if (!topicFilter(batch.topic)) return;
        seen += batch.valid + batch.deadLetters;
        if (seen >= expected) done();
      };
      listeners.push([worker, listener]);
      worker.pipeline.events.on('batch', listener);
    }
    if (expected <= 0) done();
  });
}
