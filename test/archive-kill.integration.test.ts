/**
 * The archive killed for real (issue 45): `main.ts all` against a local chain — the archive's head stage,
 * its ingest and the live plane in one OS process, embedded store, in-process log, as `npm start` runs
 * with POLYGON_RPC_URL — SIGKILLed while a follower holds provisional fills open, then started again over
 * the same data directory. While it is down, one fill's block is replaced by a reorg and the other's is
 * finalized. The restarted archive resolves the blocks its killed run left open; the follower reconnects,
 * resumes its open refs and is told each one's end exactly once; REST holds the surviving fill once and
 * never the retracted one.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { ServerMessage } from '../operations/live/messages.ts';
import { API } from './harness/api.ts';
import { archiveEnvironment, archiveOverrides } from './harness/archive.ts';
import { generateWorld } from './harness/chain-world.ts';
import { startRole, type RoleProcess } from './harness/child.ts';
import { testConfig, testEnvironment, testOverrides, uniqueId } from './harness/context.ts';
import { LiveClient } from './harness/live.ts';
import { LocalPolygonNode } from './harness/polygon-node.ts';

type EventMessage = Extract<ServerMessage, { type: 'event' }>;

describe('a kill -9 of the archive as an OS process, provisional events in flight', () => {
  const node = new LocalPolygonNode();
  const children: RoleProcess[] = [];
  let dataDir = '';
  afterAll(async () => {
    for (const child of children) if (child.child.exitCode === null) child.child.kill('SIGKILL');
    await Promise.all(children.map((child) => child.exited));
    await node.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('after the restart every open event ends once at the watcher, and the stored fills hold no duplicate', async () => {
    const world = generateWorld({ seed: 455, markets: 3, wallets: 4, matches: 24 });
    const blockOfTs = (ts: number) => world.firstBlock + (ts - world.timestampOf(world.firstBlock)) / 2;
    const fillBlocks = [...new Set(world.fills.map((fill) => blockOfTs(fill.ts)))].sort((a, b) => a - b);
    const fillIn = (block: number) => {
      const fill = world.fills.find((candidate) => blockOfTs(candidate.ts) === block)!;
      return { ...fill, block, usd: Number(fill.usdMicro) / 1e6 };
    };
    // The registrations before the fills, final at once: the archive knows every token before the head moves.
    await node.start(0);
    node.finalityDepth = 0;
    for (let block = world.firstBlock; block < fillBlocks[0]!; block++)
      node.setBlock(block, world.timestampOf(block), world.blocks.get(block) ?? []);
    const mineThrough = (last: number, skip: ReadonlySet<number> = new Set()) => {
      for (let number = node.head + 1; number <= last; number++)
        node.mine(skip.has(number) ? [] : (world.blocks.get(number) ?? []), number, world.timestampOf(number));
    };

    dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-archive-kill-'));
    const environment: Record<string, string> = testEnvironment(uniqueId('archive_kill'), dataDir, {
      ...archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(world.firstBlock),
        ARCHIVE_FINALIZED: 'true',
        ARCHIVE_CONFIRMATIONS: '2',
      }),
      LOG_LEVEL: 'info',
      PORT: '0',
      METRICS_PORT: '0',
    });
    delete environment.KAFKA_BROKERS;
    const overrides = testOverrides(archiveOverrides({ decodeWorkers: 0, headPollMs: 25 }));
    const config = testConfig(environment, overrides);
    const start = async () => {
      const child = startRole('all', [], environment, { overrides });
      children.push(child);
      const listening = await child.waitFor((line) => line.msg === 'listening');
      await child.waitFor((line) => typeof line.text === 'string' && line.text.startsWith('ready:'));
      const origin = String(listening.address).replace('localhost', '127.0.0.1');
      return { role: child, origin };
    };
    const connect = async (origin: string, key: string) => {
      const client = new LiveClient(
        new WebSocket(`${origin.replace('http', 'ws')}${API}${config.live.path}`, [config.live.protocol], {
          headers: { authorization: `Bearer ${key}` },
        }),
      );
      await client.nextOf('ready');
      return client;
    };

    const first = await start();
    const key = (JSON.parse(await readFile(path.join(dataDir, 'demo-keys.json'), 'utf8')) as { pro: string }).pro;
    const stays = fillIn(fillBlocks[0]!);
    const goes = fillIn(fillBlocks[1]!);
    const before = await connect(first.origin, key);
    for (const wallet of new Set([stays.wallet, goes.wallet]))
      expect(await before.command({ type: 'follow', trader: wallet })).toMatchObject({ type: 'ack' });
    // Finality far behind: both blocks are open when the process dies.
    node.finalityDepth = 50;
    mineThrough(goes.block);
    const provisional = new Map<string, EventMessage>();
    for (const fill of [stays, goes]) {
      for (;;) {
        const message = await before.next();
        if (message.type !== 'event' || message.event.type !== 'fill' || message.event.usd !== fill.usd) continue;
        expect(message.event).toMatchObject({ provisional: true });
        provisional.set(message.event.ref!, message);
        break;
      }
    }
    const [staysRef, goesRef] = [...provisional.keys()] as [string, string];

    first.role.child.kill('SIGKILL');
    expect(await first.role.exited).toBe('SIGKILL');
    expect((await before.closed).code).toBe(1006);
    const open = before.messages.flatMap((message) =>
      message.type === 'event' && message.event.type !== 'final' && message.event.type !== 'retracted'
        ? 'provisional' in message.event && message.event.provisional
          ? [message.event.ref!]
          : []
        : [],
    );
    const ended = new Set(
      before.messages.flatMap((message) =>
        message.type === 'event' && (message.event.type === 'final' || message.event.type === 'retracted')
          ? [message.event.ref]
          : [],
      ),
    );
    expect(ended.size).toBe(0);
    // Each provisional event was sent once.
    expect(new Set(open).size).toBe(open.length);
    expect(open).toEqual(expect.arrayContaining([staysRef, goesRef]));

    // While it is down: the second fill's block is replaced (empty), and the chain finalizes past the first.
    node.reorg(goes.block, new Map([[goes.block, []]]));
    node.finalityDepth = goes.block - stays.block;

    const second = await start();
    expect(second.role.lines.some((line) => String(line.msg).includes('left open by the previous run'))).toBe(true);
    const after = await connect(second.origin, key);
    expect(await after.command({ type: 'resume', refs: open })).toMatchObject({ type: 'ack', of: 'resume' });
    // Everything finalizes: the blocks between the two are final too.
    node.finalityDepth = 0;
    mineThrough(goes.block + 1, new Set([goes.block]));
    const resolved = new Map<string, string[]>();
    while (!open.every((ref) => resolved.has(ref))) {
      const message = await after.next();
      if (message.type === 'resolved') resolved.set(message.ref, [...(resolved.get(message.ref) ?? []), message.state]);
    }
    expect(resolved.get(staysRef)).toEqual(['final']);
    expect(resolved.get(goesRef)).toEqual(['retracted']);
    for (const ref of open)
      expect(resolved.get(ref), ref).toEqual([Number(ref.split(':')[0]) === goes.block ? 'retracted' : 'final']);

    // REST: the surviving fill once, the retracted one never.
    const fillsOf = async (wallet: string) => {
      const response = await fetch(`${second.origin}${API}/traders/${wallet}/fills?since=0&limit=1000`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { fills: Array<{ usd: number; ts: number }> }).fills;
    };
    let stored: Array<{ usd: number; ts: number }> = [];
    while (!stored.some((row) => row.usd === stays.usd && row.ts === stays.ts)) stored = await fillsOf(stays.wallet);
    expect(stored.filter((row) => row.usd === stays.usd && row.ts === stays.ts)).toHaveLength(1);
    expect((await fillsOf(goes.wallet)).filter((row) => row.usd === goes.usd && row.ts === goes.ts)).toEqual([]);
    // Nothing more arrives for a resumed ref: after a round trip, still one answer each.
    expect(await after.command({ type: 'ping', id: 'last' })).toMatchObject({ type: 'pong' });
    expect(after.messages.filter((message) => message.type === 'resolved')).toHaveLength(open.length);
    expect(after.messages.filter((message) => message.type === 'event')).toEqual([]);
    await after.close();
  }, 120_000);
});
