/**
 * Real process deaths: an ingest worker killed with SIGKILL mid-stream loses nothing and double-counts
 * nothing once restarted; one stopped with SIGTERM finishes and commits the batch in flight, so the
 * store holds exactly the committed prefix of the log.
 *
 * The workers run as child processes (`main.ts ingest`) on their own embedded store; this test process
 * opens that store only after they are gone (chDB binds a data directory to one process at a time).
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { KafkaLog } from '../ingest/bus/kafka.ts';
import { TopicNames, type EventInputOf } from '../ingest/contract/topics.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import { BASE_TS, makeConditionId, makeFill, makeWallet } from './factories.ts';
import { runScript, startRole, type LogLine, type RoleProcess } from './harness/child.ts';
import { testConfig, testEnvironment, testOverrides, uniqueId } from './harness/context.ts';

type Fill = EventInputOf<'fillsArchive'>;

function fillsFor(round: number, count: number): Fill[] {
  const wallets = Array.from({ length: 40 }, (_, index) => makeWallet(`crash-w${index}`));
  const markets = Array.from({ length: 10 }, (_, index) => makeConditionId(`crash-m${index}`));
  return Array.from({ length: count }, (_, index) =>
    makeFill({
      wallet: wallets[(index * 7 + round) % wallets.length]!,
      condition_id: markets[(index * 3 + round) % markets.length]!,
      side: index % 4 === 0 ? 'SELL' : 'BUY',
      token_side: index % 3 === 0 ? 2 : 1,
      price: ((index % 97) + 1) / 100,
      size_tokens: (index % 50) + 1,
      usd: Math.round(((index % 97) + 1) * ((index % 50) + 1)) / 100,
      ts: BASE_TS + index,
    }),
  );
}

const isCommit = (line: LogLine) => line.msg === 'offsets committed';

/** Highest committed offset per partition of a topic, as the workers logged them. */
function committedFromLogs(processes: RoleProcess[], topic: string): Map<number, bigint> {
  const committed = new Map<number, bigint>();
  for (const process of processes) {
    for (const line of process.lines) {
      if (!isCommit(line) || line.topic !== topic) continue;
      const partition = Number(line.partition);
      const offset = BigInt(String(line.offset));
      if (offset > (committed.get(partition) ?? -1n)) committed.set(partition, offset);
    }
  }
  return committed;
}

describe('ingest worker crashes and restarts', () => {
  const id = uniqueId('crash');
  let dataDir = '';
  let kafka: KafkaLog | undefined;
  const processes: RoleProcess[] = [];

  afterAll(async () => {
    for (const process of processes) if (process.child.exitCode === null) process.child.kill('SIGKILL');
    await kafka?.close();
  });

  it('loses nothing and counts nothing twice across SIGKILL and SIGTERM', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-crash-'));
    // Small fetches and writes make many batches, so the kill and the stop land mid-stream.
    const environment = testEnvironment(id, dataDir, { LOG_LEVEL: 'debug', INGEST_LINGER_MS: '20' });
    const overrides = testOverrides({
      ingest: { maxBytesPerPartition: 32_768, maxBatchMessages: 400, rollupIntervalMs: 50 },
    });
    const config = testConfig(environment, overrides);
    const log = createLogger('error');
    const topics = new TopicNames(config.kafka.topicPrefix);
    const fillsTopic = topics.of('fillsArchive');
    kafka = new KafkaLog({ brokers: config.kafka.brokers!, clientId: `${id}-test`, log });
    // Merges off on the landing tables: a duplicate insert stays a row, visible to a count without FINAL.
    expect(
      await runScript(['test/harness/frozen-landing.ts', config.clickhouse.embeddedPath, config.clickhouse.database]),
    ).toBe(0);
    const publisher = new EventPublisher(await kafka.producer(), topics);

    const firstRound = fillsFor(1, 20_000);
    await publisher.publish('fillsArchive', firstRound);
    let ends = (await kafka.endOffsets([fillsTopic])).get(fillsTopic)!;

    // 1. SIGKILL after a few commits: mid-stream, no chance to clean up.
    const killed = startRole('ingest', [], environment, { overrides });
    processes.push(killed);
    let commits = 0;
    await killed.waitFor((line) => isCommit(line) && ++commits >= 3);
    killed.child.kill('SIGKILL');
    expect(await killed.exited).toBe('SIGKILL');
    const atKill = committedFromLogs([killed], fillsTopic);
    const committedAtKill = [...atKill.values()].reduce((sum, offset) => sum + offset, 0n);
    expect(committedAtKill).toBeLessThan(BigInt(firstRound.length));

    // 2. A new worker takes over from the committed offsets and finishes the backlog.
    const restarted = startRole('ingest', [], environment, { overrides });
    processes.push(restarted);
    const caughtUp = (targets: Map<number, bigint>, workers: RoleProcess[]) => () => {
      const committed = committedFromLogs(workers, fillsTopic);
      return [...targets].every(([partition, end]) => end === 0n || (committed.get(partition) ?? 0n) >= end);
    };
    const firstDone = caughtUp(ends, [killed, restarted]);
    if (!firstDone()) await restarted.waitFor((line) => isCommit(line) && firstDone());

    // 3. More data, then SIGTERM while it is being consumed: the batch in flight is finished and committed.
    const secondRound = fillsFor(2, 20_000);
    const beforeSecond = restarted.lines.filter(isCommit).length;
    await publisher.publish('fillsArchive', secondRound);
    ends = (await kafka.endOffsets([fillsTopic])).get(fillsTopic)!;
    await restarted.waitFor((line) => isCommit(line) && restarted.lines.filter(isCommit).length >= beforeSecond + 3);
    restarted.child.kill('SIGTERM');
    expect(await restarted.exited).toBe(0);
    const committedAfterTerm = committedFromLogs([killed, restarted], fillsTopic);
    const committedTotal = [...committedAfterTerm.values()].reduce((sum, offset) => sum + offset, 0n);
    expect(committedTotal).toBeLessThan(BigInt(firstRound.length + secondRound.length));

    const checkStore = async (expectedFills: number, expectedSet: Fill[]) => {
      const store = await openMigratedStore(config, log);
      try {
        // Raw rows, without FINAL: a fill written twice (an insert whose commit the kill prevented, written
        // again by the next worker under another token) would be two rows here.
        const [count] = await store.query<{ n: number; distinct: number }>(
          'SELECT count() AS n, uniqExact(wallet, fill_id) AS distinct FROM {db:Identifier}.fills',
        );
        expect(count).toEqual({ n: expectedFills, distinct: expectedFills });
        const rollups = await store.query<{
          wallet: string;
          condition_id: string;
          fills_count: number;
          buy_usd: number;
          sell_usd: number;
        }>('SELECT wallet, condition_id, fills_count, buy_usd, sell_usd FROM {db:Identifier}.trader_markets_v2 FINAL');
        const totals = rollups.reduce(
          (sum, row) => ({ fills: sum.fills + row.fills_count, usd: sum.usd + row.buy_usd + row.sell_usd }),
          { fills: 0, usd: 0 },
        );
        expect(totals.fills).toBe(expectedFills);
        if (expectedSet.length === expectedFills) {
          expect(totals.usd).toBeCloseTo(
            expectedSet.reduce((sum, fill) => sum + fill.usd, 0),
            4,
          );
        }
      } finally {
        await store.close();
      }
    };

    // The store holds exactly the committed prefix: nothing inserted without its commit, nothing committed without its insert.
    // (Each fill is one message and offsets start at 0, so the committed offsets sum to the fills consumed.)
    await checkStore(Number(committedTotal), []);

    // 4. Finish the rest and check the whole log is in, once.
    const finisher = startRole('ingest', [], environment, { overrides });
    processes.push(finisher);
    const allDone = caughtUp(ends, [killed, restarted, finisher]);
    if (!allDone()) await finisher.waitFor((line) => isCommit(line) && allDone());
    finisher.child.kill('SIGTERM');
    expect(await finisher.exited).toBe(0);
    await checkStore(firstRound.length + secondRound.length, [...firstRound, ...secondRound]);
  });
});
