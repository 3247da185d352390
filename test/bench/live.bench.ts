/**
 * `npm run bench:live` — the live plane's fan-out (issue 38): an event published on the log → received
 * by every WebSocket client watching its market, with --connections clients (default 1,000) watching
 * --markets markets (100), on the embedded default (in-process log, in-memory slots), beside the bare
 * fan-out of the same events in the same run: a plain `ws` server that sends each event to the sockets of
 * its market, with no log, no plane, no slots (what the plane costs on top of sending).
 *
 * The clients live in a child process of their own (the server's event loop is not theirs); times are
 * epoch milliseconds with sub-millisecond precision on both sides (performance.timeOrigin + now), so a
 * delivery's latency is its receive time minus its publish time. Each event is a trade whose
 * `size_tokens` carries its id. Per plane, two phases:
 *   1. paced: --rate events per second for --seconds s (each to its market's watchers): delivery latency
 *      p50/p99 (target: the plane's p99 ≤ 50 ms);
 *   2. burst: --burst events published at once: deliveries per second until the last one arrived
 *      (target: the plane's ≥ 0.5 × the bare fan-out's).
 * The same plane again with recording on (`recorded`: every watch is a Max watch, saved onto the log as it
 * goes) shows what recording costs.
 * Printed beside: the server process's CPU per phase, and its memory per connection (RSS and heap after
 * the connections opened and watched, minus before, ÷ connections). A second of paced events before the
 * runs warms each side up (the first events of a process pay for its compilation).
 *
 * Options: --connections N (1000), --markets N (100), --rate N (200), --seconds S (5), --burst N (2000),
 * --repeat N (2).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket, { WebSocketServer } from 'ws';
import type { RecordingSink } from '../../operations/live/recording.ts';
import { startLiveServer } from '../harness/live.ts';
import { ForkedRunner } from './load.ts';
import { median, percentile, runBenchmark } from './support.ts';

/** Epoch milliseconds, comparable across processes on one machine. */
const epochMs = () => performance.timeOrigin + performance.now();

interface ClientJob {
  kind: 'connect';
  url: string;
  /** Per connection: its credential (null: the bare server, no authentication) and the pair it watches. */
  connections: { authorization: string | null; trader: string; market: string }[];
  protocol: string | null;
}
type CollectJob = { kind: 'collect'; expected: number; timeoutMs: number };
type CloseJob = { kind: 'close' };
type Job = ClientJob | CollectJob | CloseJob;
/** Deliveries since the last collect: [event id, received at (epoch ms)]. */
type Collected = { received: [number, number][]; errors: string[] };

// ——— the clients (the child process) ———

if (process.argv.includes('--live-clients')) {
  let sockets: WebSocket[] = [];
  let received: [number, number][] = [];
  let wake: (() => void) | null = null;
  const errors: string[] = [];
  const onMessage = (data: WebSocket.RawData) => {
    const at = epochMs();
    const message = JSON.parse(data.toString()) as { type: string; event?: { type: string; size_tokens?: number } };
    if (message.type === 'event' && message.event?.type === 'trade') received.push([message.event.size_tokens!, at]);
    else if (message.type === 'error') errors.push(JSON.stringify(message));
    wake?.();
  };
  const connectAll = async (job: ClientJob) => {
    sockets = await Promise.all(
      job.connections.map(
        (connection) =>
          new Promise<WebSocket>((resolve, reject) => {
            const socket = new WebSocket(job.url, job.protocol ? [job.protocol] : [], {
              headers: connection.authorization ? { authorization: connection.authorization } : {},
            });
            const watch = () =>
              socket.send(
                JSON.stringify({ type: 'watch', id: 'w', trader: connection.trader, market: connection.market }),
              );
            const acked = (data: WebSocket.RawData) => {
              const message = JSON.parse(data.toString()) as { type: string; code?: string; retry_after?: number };
              if (message.type === 'ready') watch();
              else if (message.type === 'ack' || message.type === 'subscribed') {
                socket.off('message', acked);
                socket.on('message', onMessage);
                resolve(socket);
              } else if (message.type === 'error' && message.code === 'overloaded')
                // Every client connecting at once reads the store at once: shed ones retry, as the error says
                // (spread over the second, as a client's backoff would).
                setTimeout(watch, (message.retry_after ?? 1) * 1000 * (0.5 + Math.random()));
              else if (message.type === 'error') reject(new Error(JSON.stringify(message)));
            };
            socket.on('message', acked);
            socket.once('error', reject);
            if (!job.protocol)
              socket.once('open', () => {
                socket.send(JSON.stringify({ type: 'watch', market: connection.market }));
              });
          }),
      ),
    );
  };
  process.on('message', (job: Job) => {
    const answer = async (): Promise<unknown> => {
      if (job.kind === 'connect') {
        await connectAll(job);
        return { connected: sockets.length };
      }
      if (job.kind === 'collect') {
        const deadline = Date.now() + job.timeoutMs;
        while (received.length < job.expected && Date.now() < deadline)
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, 100);
          });
        const collected: Collected = { received, errors: errors.splice(0) };
        received = [];
        return collected;
      }
      for (const socket of sockets) socket.terminate();
      sockets = [];
      return { closed: true };
    };
    answer().then(
      (result) => process.send!({ ok: true, result }),
      (error: unknown) => process.send!({ ok: false, error: String(error) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
}

// ——— the server side (this process) ———

interface Fanout {
  name: string;
  /** Publishes trades (ids in size_tokens) and returns when they left this process's hands. */
  publish(events: { id: number; market: string }[]): Promise<void>;
  connect(): Promise<void>;
}

interface PhaseFigures {
  p50: number;
  p99: number;
  /** Deliveries per second (burst: until the last delivery). */
  throughput: number;
  delivered: number;
  expected: number;
  cpuCores: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      connections: { type: 'string', default: '1000' },
      markets: { type: 'string', default: '100' },
      rate: { type: 'string', default: '200' },
      seconds: { type: 'string', default: '5' },
      burst: { type: 'string', default: '2000' },
      repeat: { type: 'string', default: '2' },
    },
  });
  const CONNECTIONS = Number(values.connections);
  const MARKETS = Number(values.markets);
  const RATE = Number(values.rate);
  const SECONDS = Number(values.seconds);
  const BURST = Number(values.burst);
  const REPEAT = Number(values.repeat);
  const [{ parseConfig }, { createLogger }, { withPublisher }, { publishAccount, publishNewKey }, factories] =
    await Promise.all([
      import('../../config.ts'),
      import('../../log.ts'),
      import('../../roles/runtime.ts'),
      import('../../ingest/sources/accounts.ts'),
      import('../factories.ts'),
    ]);
  console.log(
    `${os.cpus().length} CPUs; load average at start ${os
      .loadavg()
      .map((v) => v.toFixed(1))
      .join(' ')}`,
  );
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-live-'));
  const clients = new ForkedRunner<Job, unknown>(import.meta.url, '--live-clients');
  const log = createLogger('error');
  try {
    const config = parseConfig({
      DATA_DIR: dataDir,
      CLICKHOUSE_DATABASE: 'bench_live',
      LOG_LEVEL: 'error',
      SIM_LIVE: 'false',
    });
    const nowSeconds = Math.floor(Date.now() / 1000);
    const markets = Array.from({ length: MARKETS }, (_, index) => factories.makeConditionId(`bench-live-${index}`));
    const trader = factories.makeWallet('bench-live-trader');
    // Max accounts (5 slots each): one slot per connection.
    const slotsPerAccount = config.plans.max.liveSlots;
    const accounts = Math.ceil(CONNECTIONS / slotsPerAccount);
    const authorizations: string[] = [];
    const built = performance.now();
    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish(
        'markets',
        markets.map((conditionId, index) =>
          factories.makeMarket({ condition_id: conditionId, title: `Bench ${index}` }),
        ),
      );
      for (let account = 0; account < accounts; account++) {
        const accountId = `bench-live-${account}`;
        await publishAccount(publisher, { accountId, plan: 'max', displayName: 'Bench', version: nowSeconds });
        authorizations.push(`Bearer ${(await publishNewKey(publisher, accountId, 'bench', nowSeconds)).plaintext}`);
      }
    });
    console.log(
      `${CONNECTIONS} connections (${accounts} Max accounts) watching ${MARKETS} markets; accounts and markets in ${((performance.now() - built) / 1000).toFixed(1)} s`,
    );
    const watches = Array.from({ length: CONNECTIONS }, (_, index) => ({
      authorization: authorizations[Math.floor(index / slotsPerAccount)]!,
      trader,
      market: markets[index % MARKETS]!,
    }));
    const watchersOf = (market: string) => watches.filter((watch) => watch.market === market).length;
    const watchers = new Map(markets.map((market) => [market, watchersOf(market)]));

    // The plane: the HTTP server with the live route, fed by its own in-process log; without and with recording.
    const trade = ({ id, market }: { id: number; market: string }) =>
      factories.makeTrade({ condition_id: market, size_tokens: id, price: 0.5, usd: id / 2, ts: nowSeconds });
    const servers: Awaited<ReturnType<typeof startLiveServer>>[] = [];
    const planeSide = async (name: string, record: boolean): Promise<Fanout> => {
      const server = await startLiveServer(config, createLogger('silent'), {
        retainedBytes: 256 * 1024 * 1024,
        ...(record ? { recordings: (onLog: RecordingSink) => onLog } : {}),
      });
      servers.push(server);
      const url = `${server.origin.replace('http', 'ws')}${server.livePath}`;
      return {
        name,
        publish: (events) => server.publisher.publish('trades', events.map(trade)),
        connect: async () => {
          await clients.run({ kind: 'connect', url, connections: watches, protocol: config.live.protocol });
        },
      };
    };
    const plane = await planeSide('plane', false);
    const recorded = await planeSide('recorded', true);

    // The bare fan-out: each event serialized as the plane frames it, sent to its market's sockets.
    const bare = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => bare.once('listening', () => resolve()));
    const socketsOf = new Map<string, Set<WebSocket>>();
    const sequence = new Map<string, number>();
    bare.on('connection', (socket) => {
      socket.once('message', (data) => {
        const { market } = JSON.parse(data.toString()) as { market: string };
        let sockets = socketsOf.get(market);
        if (!sockets) socketsOf.set(market, (sockets = new Set()));
        sockets.add(socket);
        socket.send(JSON.stringify({ type: 'ack' }));
      });
    });
    const bareUrl = `ws://127.0.0.1:${(bare.address() as AddressInfo).port}`;
    const fanout: Fanout = {
      name: 'bare',
      publish: async (events) => {
        for (const event of events) {
          const { tx_hash: _tx, log_index: _index, seq: _seq, condition_id: market, ...fields } = trade(event);
          const seq = (sequence.get(market) ?? 0) + 1;
          sequence.set(market, seq);
          for (const socket of socketsOf.get(market) ?? [])
            socket.send(
              JSON.stringify({ type: 'event', market, wallet: null, seq, event: { type: 'trade', ...fields } }),
            );
        }
      },
      connect: async () => {
        await clients.run({
          kind: 'connect',
          url: bareUrl,
          connections: watches.map((watch) => ({ ...watch, authorization: null })),
          protocol: null,
        });
      },
    };

    let nextId = 1;
    const expectedFor = (events: { market: string }[]) =>
      events.reduce((sum, event) => sum + (watchers.get(event.market) ?? 0), 0);
    const figuresOf = async (
      side: Fanout,
      events: { id: number; market: string }[],
      publish: () => Promise<Map<number, number>>,
    ): Promise<PhaseFigures> => {
      const expected = expectedFor(events);
      const cpu = process.cpuUsage();
      const started = performance.now();
      const collecting = clients.run({ kind: 'collect', expected, timeoutMs: 30_000 }) as Promise<Collected>;
      const publishedAt = await publish();
      const collected = await collecting;
      const wall = performance.now() - started;
      const used = process.cpuUsage(cpu);
      if (collected.errors.length > 0) throw new Error(`${side.name}: ${collected.errors[0]}`);
      const latencies = collected.received.map(([id, at]) => at - publishedAt.get(id)!);
      const first = Math.min(...publishedAt.values());
      const last = Math.max(...collected.received.map(([, at]) => at));
      return {
        p50: percentile(latencies, 0.5),
        p99: percentile(latencies, 0.99),
        throughput: collected.received.length / ((last - first) / 1000),
        delivered: collected.received.length,
        expected,
        cpuCores: (used.user + used.system) / 1000 / wall,
      };
    };
    const paced = (side: Fanout, seconds = SECONDS) => {
      const events = Array.from({ length: Math.round(RATE * seconds) }, (_, index) => ({
        id: nextId++,
        market: markets[index % MARKETS]!,
      }));
      return figuresOf(side, events, async () => {
        const publishedAt = new Map<number, number>();
        const start = performance.now();
        for (let index = 0; index < events.length; index++) {
          const due = start + (index * 1000) / RATE;
          const wait = due - performance.now();
          if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
          publishedAt.set(events[index]!.id, epochMs());
          await side.publish([events[index]!]);
        }
        return publishedAt;
      });
    };
    const burst = (side: Fanout) => {
      const events = Array.from({ length: BURST }, (_, index) => ({ id: nextId++, market: markets[index % MARKETS]! }));
      return figuresOf(side, events, async () => {
        const publishedAt = new Map<number, number>();
        const at = epochMs();
        for (const event of events) publishedAt.set(event.id, at);
        await side.publish(events);
        return publishedAt;
      });
    };

    const memory = () => {
      globalThis.gc?.();
      const { rss, heapUsed } = process.memoryUsage();
      return { rss, heapUsed };
    };
    const results: Record<string, { paced: PhaseFigures[]; burst: PhaseFigures[]; perConnection: string }> = {};
    for (const side of [plane, recorded, fanout]) {
      const before = memory();
      await side.connect();
      const after = memory();
      const perConnection = `RSS ${((after.rss - before.rss) / CONNECTIONS / 1024).toFixed(1)} KiB, heap ${((after.heapUsed - before.heapUsed) / CONNECTIONS / 1024).toFixed(1)} KiB`;
      results[side.name] = { paced: [], burst: [], perConnection };
      // Warm-up, not counted: the first events of a process pay for its compilation.
      await paced(side, 1);
      for (let run = 1; run <= REPEAT; run++) {
        const pacedFigures = await paced(side);
        const burstFigures = await burst(side);
        results[side.name]!.paced.push(pacedFigures);
        results[side.name]!.burst.push(burstFigures);
        console.log(
          `${side.name} run ${run} (load ${os.loadavg()[0]!.toFixed(1)}): paced ${RATE}/s → ${pacedFigures.delivered}/${pacedFigures.expected} delivered, p50 ${pacedFigures.p50.toFixed(1)} ms p99 ${pacedFigures.p99.toFixed(1)} ms, CPU ${pacedFigures.cpuCores.toFixed(2)} cores; ` +
            `burst of ${BURST} → ${burstFigures.delivered}/${burstFigures.expected} delivered at ${burstFigures.throughput.toFixed(0)}/s, p50 ${burstFigures.p50.toFixed(1)} ms p99 ${burstFigures.p99.toFixed(1)} ms, CPU ${burstFigures.cpuCores.toFixed(2)} cores`,
        );
      }
      await clients.run({ kind: 'close' });
    }
    for (const server of servers) await server.close();
    bare.close();

    const med = (name: string, phase: 'paced' | 'burst', pick: (figures: PhaseFigures) => number) =>
      median(results[name]![phase].map(pick));
    const planeP99 = med('plane', 'paced', (figures) => figures.p99);
    const ratio = med('plane', 'burst', (f) => f.throughput) / med('bare', 'burst', (f) => f.throughput);
    console.log(`\nmedians of ${REPEAT} run(s), ${CONNECTIONS} connections watching ${MARKETS} markets`);
    for (const name of ['plane', 'recorded', 'bare'])
      console.log(
        `  ${name.padEnd(8)} paced p50 ${med(name, 'paced', (f) => f.p50).toFixed(1)} ms, p99 ${med(name, 'paced', (f) => f.p99).toFixed(1)} ms; burst ${med(name, 'burst', (f) => f.throughput).toFixed(0)} deliveries/s (p99 ${med(name, 'burst', (f) => f.p99).toFixed(1)} ms); CPU ${med(name, 'paced', (f) => f.cpuCores).toFixed(2)} cores paced, ${med(name, 'burst', (f) => f.cpuCores).toFixed(2)} in the burst; memory per connection: ${results[name]!.perConnection}`,
      );
    const complete = Object.values(results).every((result) =>
      [...result.paced, ...result.burst].every((figures) => figures.delivered === figures.expected),
    );
    const recordedRatio = med('recorded', 'burst', (f) => f.throughput) / med('plane', 'burst', (f) => f.throughput);
    console.log(
      `  recording: paced p99 ${med('recorded', 'paced', (f) => f.p99).toFixed(1)} ms against ${planeP99.toFixed(1)}; burst throughput ${recordedRatio.toFixed(2)} × the plane's without it`,
    );
    const checks = [
      ['every event reached every watcher', complete],
      [`the plane's p99 (paced) ≤ 50 ms: ${planeP99.toFixed(1)} ms`, planeP99 <= 50],
      [`the plane's throughput ≥ 0.5 × the bare fan-out's: ${ratio.toFixed(2)} ×`, ratio >= 0.5],
    ] as const;
    for (const [label, ok] of checks) console.log(`  ${ok ? 'ok  ' : 'MISS'} ${label}`);
  } finally {
    clients.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (!process.argv.includes('--live-clients')) runBenchmark(main);
