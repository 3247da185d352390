/**
 * The ingest-side roles of the program: ingest, simulate, replay, export, import, migrate.
 * Each returns the process exit code.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { openMigratedStore, shutdownSignal, throttled, untilAborted, withPublisher } from './runtime.ts';
import type { FileFailure } from '../ingest/sources/files.ts';
import { exportTopics, replayFiles } from '../ingest/sources/replay.ts';
import { openEventLog, startIngestWorker } from '../ingest/worker.ts';

function percentOf(done: number, total: number): number {
  return total === 0 ? 100 : Math.round((100 * done) / total);
}

/** Where import and replay write their human report: the counts on stdout, files named on stderr. */
export interface CommandOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}
const processOutput: CommandOutput = { stdout: process.stdout, stderr: process.stderr };

/**
 * A file that `import` or `replay` could not read whole, said the same way by both: on stderr with its
 * reason (and in the log). Such a file published nothing, and the command exits 1.
 */
function reportFailedFile(log: Logger, output: CommandOutput, failure: FileFailure): void {
  log.error(failure, 'file not read whole: nothing of it was published');
  output.stderr.write(`failed: ${failure.file}: ${failure.reason}. Nothing of it was published.\n`);
}

/** Exit code of import and replay: 1 when any file failed, else 0. */
const EXIT_FILE_FAILED = 1;

export async function runMigrate(config: Config, log: Logger): Promise<number> {
  const store = await openMigratedStore(config, log);
  await store.close();
  log.info({ database: config.clickhouse.database, store: store.kind }, 'migrations applied');
  return 0;
}

export async function runIngest(config: Config, log: Logger): Promise<number> {
  if (!config.kafka.brokers) {
    log.error('the ingest role consumes Kafka: set KAFKA_BROKERS (or run `all`, which ingests in process)');
    return 2;
  }
  const signal = shutdownSignal(log, config.shutdown.graceMs);
  const store = await openMigratedStore(config, log);
  const eventLog = openEventLog(config, log);
  const worker = await startIngestWorker({ config, eventLog, store, log });
  await untilAborted(signal);
  await worker.stop();
  await eventLog.close();
  await store.close();
  return 0;
}

export async function runSimulate(
  config: Config,
  log: Logger,
  options: { backfillDays: number; live: boolean },
): Promise<number> {
  const signal = shutdownSignal(log, config.shutdown.graceMs);
  // Loaded on demand: the other roles should not pay for the simulator's module graph.
  const { createSimulator, runSimulator } = await import('../ingest/sources/simulator/index.ts');
  const simulator = createSimulator({ seed: config.simulator.seed, traders: config.simulator.traders });
  await withPublisher(config, log, async ({ publisher }) => {
    let latest: { phase: string; doneTs: number } = { phase: 'backfill', doneTs: 0 };
    const report = throttled(2000, () => log.info({ ...latest, published: publisher.count }, 'simulating'));
    const counts = await runSimulator(simulator, publisher, {
      backfillDays: options.backfillDays,
      live: options.live,
      signal,
      onProgress: (info) => {
        latest = { phase: info.phase, doneTs: info.doneTs };
        report();
      },
    });
    log.info({ counts, published: publisher.count }, 'simulation finished');
  });
  return 0;
}

export async function runReplay(
  config: Config,
  log: Logger,
  paths: string[],
  output: CommandOutput = processOutput,
): Promise<number> {
  if (paths.length === 0) {
    log.error('replay needs at least one .jsonl / .jsonl.gz file or directory');
    return 2;
  }
  const counts = await withPublisher(config, log, async ({ publisher }) => {
    let latest = { file: '', lines: 0, percent: 0 };
    const report = throttled(2000, () => log.info(latest, 'replaying'));
    return replayFiles(paths, publisher, (progress) => {
      latest = {
        file: progress.file,
        lines: progress.lines,
        percent: percentOf(progress.bytesRead, progress.bytesTotal),
      };
      report();
    });
  });
  log.info({ counts }, 'replay finished');
  if (counts.unattributed > 0)
    log.warn({ unattributed: counts.unattributed }, 'lines whose topic could not be told were skipped');
  for (const failure of counts.failed) reportFailedFile(log, output, failure);
  output.stdout.write(
    `read ${counts.lines} lines, published ${counts.published}, unattributed ${counts.unattributed} (${counts.files} files: ${counts.files - counts.failed.length} read, ${counts.failed.length} failed)\n`,
  );
  return counts.failed.length > 0 ? EXIT_FILE_FAILED : 0;
}

export async function runExport(
  config: Config,
  log: Logger,
  directory: string | undefined,
  options: { gzip: boolean },
): Promise<number> {
  if (!directory) {
    log.error('export needs a target directory');
    return 2;
  }
  if (!config.kafka.brokers) {
    log.error('export reads Kafka topics: set KAFKA_BROKERS');
    return 2;
  }
  const eventLog = openEventLog(config, log);
  const report = throttled(2000, () => log.info({ events: exported }, 'exporting'));
  let exported = 0;
  const counts = await exportTopics(eventLog, new TopicNames(config.kafka.topicPrefix), directory, {
    gzip: options.gzip,
    onProgress: (events) => {
      exported = events;
      report();
    },
  });
  await eventLog.close();
  log.info({ counts, directory }, 'export finished');
  return 0;
}

export async function runImport(
  config: Config,
  log: Logger,
  paths: string[],
  options: { era: string | undefined; emitTrades: boolean },
  output: CommandOutput = processOutput,
): Promise<number> {
  if (paths.length === 0) {
    log.error('import needs at least one file or directory');
    return 2;
  }
  if (options.era !== undefined && options.era !== 'v1' && options.era !== 'v2') {
    log.error({ era: options.era }, '--era must be v1 or v2');
    return 2;
  }
  const era = options.era;
  const { importPolymarketExports } = await import('../ingest/sources/polymarket/index.ts');
  const counts = await withPublisher(config, log, async ({ publisher }) => {
    let latest = { file: '', rowsRead: 0, percent: 0 };
    const report = throttled(2000, () => log.info(latest, 'importing'));
    return importPolymarketExports(paths, publisher, {
      ...(era ? { era } : {}),
      v2StartTs: config.exchangeV2StartTs,
      emitTrades: options.emitTrades,
      // Counted by rule and said once each at the end: a bad export rejects thousands of rows alike.
      onRejected: (row) => log.debug(row, 'row rejected'),
      onSkipped: (skipped) => {
        // A row of another type (REWARD, …) is routine; a whole file passed over is said with its reason.
        if (skipped.line !== null) return log.debug(skipped, 'row skipped');
        log.warn(skipped, 'file skipped: not an /activity or /trades export');
        output.stderr.write(`skipped: ${skipped.file}: ${skipped.reason}.\n`);
      },
      onFailed: (failure) => reportFailedFile(log, output, failure),
      onProgress: (progress) => {
        latest = {
          file: progress.file,
          rowsRead: progress.rowsRead,
          percent: percentOf(progress.bytesRead, progress.bytesTotal),
        };
        report();
      },
    });
  });
  log.info({ counts }, 'import finished');
  const filesRead = counts.files - counts.skippedFiles - counts.failedFiles;
  const byRule = counts.rejections.map(({ rule, rows }) => `${rows} × ${rule}`).join('; ');
  output.stdout.write(
    `read ${counts.read}, imported ${counts.imported}, duplicate ${counts.duplicate}, rejected ${counts.rejected}${byRule ? ` (${byRule})` : ''}, skipped ${counts.skipped} ` +
      `(${counts.files} files: ${filesRead} read, ${counts.skippedFiles} skipped, ${counts.failedFiles} failed)\n`,
  );
  for (const { rule, rows, first } of counts.rejections) {
    log.warn({ rule, rows, first }, 'rows rejected');
    output.stderr.write(`rejected ${rows} × ${rule}; the first: ${first.file}:${first.line}: ${first.reason}\n`);
  }
  return counts.failedFiles > 0 ? EXIT_FILE_FAILED : 0;
}
