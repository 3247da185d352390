/**
 * `npm run bench:live-abuse` — issue 44's two attacks on the live plane by one Basic key, against the
 * embedded default's plane (in-process log, in-memory slots; startLiveServer), clients in a child process:
 *   1. flood: --connections (10) connections stop reading and each sends a bad frame --rate (3,000) times a
 *      second for --seconds (20): the server's RSS every second (start, peak, end) and how and when each
 *      connection was closed (seen from the server: its close code and reason);
 *   2. lookups: the same number of connections, reading, each sending `follow <random display name>` as
 *      fast as its answers come for --seconds: the store's name lookups counted, and the answers by code.
 *
 * Options: --connections N (10), --rate N (3000), --seconds S (20).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { parseConfig } from '../../config.ts';
import { publishAccount, publishNewKey } from '../../ingest/sources/accounts.ts';
import { createLogger } from '../../log.ts';
import type { Store } from '../../projections/store.ts';
import { withPublisher } from '../../roles/runtime.ts';
import { startLiveServer } from '../harness/live.ts';
import { ForkedRunner } from './load.ts';

type Job =
  | {
      kind: 'flood';
      url: string;
      protocol: string;
      authorization: string;
      connections: number;
      rate: number;
      seconds: number;
    }
  | { kind: 'lookups'; url: string; protocol: string; authorization: string; connections: number; seconds: number };

const open = (job: Job) =>
  new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(job.url, [job.protocol], { headers: { authorization: job.authorization } });
    socket.once('message', () => {
      // A connection the server closed breaks under the flood's writes: that is expected here.
      socket.on('error', () => {});
      resolve(socket);
    }); // ready
    socket.once('error', reject);
  });

// ——— the clients (the child process) ———

if (process.argv.includes('--abuse-clients')) {
  process.on('message', (job: Job) => {
    const run = async (): Promise<unknown> => {
      const sockets = await Promise.all(Array.from({ length: job.connections }, () => open(job)));
      const until = Date.now() + job.seconds * 1000;
      if (job.kind === 'flood') {
        let sent = 0;
        for (const socket of sockets) (socket as unknown as { _socket: { pause(): void } })._socket.pause();
        await new Promise<void>((resolve) => {
          const tick = setInterval(() => {
            if (Date.now() >= until) {
              clearInterval(tick);
              resolve();
              return;
            }
            for (const socket of sockets)
              for (let index = 0; index < job.rate / 100; index++)
                if (socket.readyState === WebSocket.OPEN) {
                  socket.send('x');
                  sent += 1;
                }
          }, 10);
        });
        for (const socket of sockets) socket.terminate();
        return { sent };
      }
      const answers: Record<string, number> = {};
      const closes: Record<string, number> = {};
      await Promise.all(
        sockets.map(
          (socket) =>
            new Promise<void>((resolve) => {
              const next = () => {
                if (Date.now() >= until || socket.readyState !== WebSocket.OPEN) return resolve();
                socket.send(JSON.stringify({ type: 'follow', trader: `nobody-${randomBytes(6).toString('hex')}` }));
              };
              socket.on('message', (data) => {
                const message = JSON.parse(data.toString()) as { type: string; code?: string };
                const key = message.code ?? message.type;
                answers[key] = (answers[key] ?? 0) + 1;
                next();
              });
              socket.on('close', (_code, reason) => {
                closes[reason.toString()] = (closes[reason.toString()] ?? 0) + 1;
                resolve();
              });
              next();
            }),
        ),
      );
      for (const socket of sockets) socket.terminate();
      return { answers, closes };
    };
    run().then(
      (result) => process.send!({ ok: true, result }),
      (error: unknown) => process.send!({ ok: false, error: String(error) }),
    );
  });
} else {
  const { values } = parseArgs({
    options: {
      connections: { type: 'string', default: '10' },
      rate: { type: 'string', default: '3000' },
      seconds: { type: 'string', default: '20' },
    },
  });
  const CONNECTIONS = Number(values.connections);
  const RATE = Number(values.rate);
  const SECONDS = Number(values.seconds);
  console.log(
    `bench:live-abuse: ${CONNECTIONS} connections of one Basic key, ${SECONDS} s per attack; ${os.cpus().length} CPUs; load average at start ${os
      .loadavg()
      .map((v) => v.toFixed(1))
      .join(' ')}`,
  );
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-bench-abuse-'));
  const clients = new ForkedRunner<Job, unknown>(import.meta.url, '--abuse-clients');
  const log = createLogger('error');
  const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  try {
    const config = parseConfig({
      DATA_DIR: dataDir,
      CLICKHOUSE_DATABASE: 'bench_abuse',
      LOG_LEVEL: 'error',
      SIM_LIVE: 'false',
    });
    const nowSeconds = Math.floor(Date.now() / 1000);
    let authorization = '';
    await withPublisher(config, log, async ({ publisher }) => {
      await publishAccount(publisher, {
        accountId: 'abuser',
        plan: 'basic',
        displayName: 'Abuser',
        version: nowSeconds,
      });
      authorization = `Bearer ${(await publishNewKey(publisher, 'abuser', 'bench', nowSeconds)).plaintext}`;
    });
    let nameReads = 0;
    const counting = (store: Store): Store => ({
      ...store,
      database: store.database,
      kind: store.kind,
      query: (sql, params, options) => {
        if (sql.includes('trader_name_index')) nameReads += 1;
        return store.query(sql, params, options);
      },
    });
    const server = await startLiveServer(config, createLogger('silent'), { wrapStore: counting });
    const url = `${server.origin.replace('http', 'ws')}${server.livePath}`;
    const common = { url, protocol: config.live.protocol, authorization, connections: CONNECTIONS, seconds: SECONDS };

    // 1. The flood.
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const started = Date.now();
    const closedAt = new Map<number, number>();
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
      server.transports.forEach((transport, index) => {
        if (transport.closedWith && !closedAt.has(index)) closedAt.set(index, Date.now() - started);
      });
    }, 250);
    const flood = (await clients.run({ kind: 'flood', rate: RATE, ...common })) as { sent: number };
    clearInterval(sampler);
    const rssAfter = process.memoryUsage().rss;
    const reasons = new Map<string, number>();
    for (const transport of server.transports) {
      const key = transport.closedWith ? `${transport.closedWith.code} ${transport.closedWith.reason}` : 'open';
      reasons.set(key, (reasons.get(key) ?? 0) + 1);
    }
    const peakBuffered = Math.max(...server.transports.map((transport) => transport.peakBufferedBytes));
    console.log(
      `flood: ${flood.sent} bad frames sent; RSS ${mib(rssBefore)} → peak ${mib(rssPeak)} → ${mib(rssAfter)} MiB; ` +
        `closed: ${[...reasons].map(([reason, count]) => `${count} × ${reason}`).join(', ')}; ` +
        `latest close ${Math.max(0, ...closedAt.values())} ms after the start (sampled every 250 ms); ` +
        `most bytes held for one connection ${peakBuffered}`,
    );

    // 2. The lookups.
    const readsBefore = nameReads;
    const lookups = (await clients.run({ kind: 'lookups', ...common })) as {
      answers: Record<string, number>;
      closes: Record<string, number>;
    };
    console.log(
      `lookups: ${nameReads - readsBefore} name lookups read the store in ${SECONDS} s (plan budget ${config.plans.basic.liveLookupsPerHour} an hour); ` +
        `answers ${JSON.stringify(lookups.answers)}; closes ${JSON.stringify(lookups.closes)}`,
    );
    await server.close();
  } finally {
    clients.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
