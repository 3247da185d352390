/**
 * The chain's head through the live plane (issue 45), against a local node (JSON-RPC over HTTP and, where a
 * test says so, a WebSocket with `eth_subscribe` newHeads): the archive's head stage publishes a block's
 * fills and prints as provisional, the plane streams them to a watching client marked `provisional: true`,
 * and each ends `final` once the node's finalized block reaches it, or `retracted` when a reorg replaces it.
 * The final stage stores only final facts: a retracted fill never reaches REST. The server, its ingest
 * worker and the archive share one in-process log, as in the `all` role.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import WebSocket from 'ws';
import type { Config } from '../config.ts';
import { archiveSink, runArchiveSource } from '../ingest/sources/archive/index.ts';
import type { ArchiveSink } from '../ingest/sources/archive/fact-publisher.ts';
import type { MemoryLog } from '../ingest/bus/memory.ts';
import { EventPublisher } from '../ingest/publisher.ts';
import { TopicNames } from '../ingest/contract/topics.ts';
import { startIngestWorker } from '../ingest/worker.ts';
import { createLogger, type Logger } from '../log.ts';
import { exposition } from '../metrics/registry.ts';
import type { ServerMessage } from '../operations/live/messages.ts';
import { readHeadBlockEnds } from '../projections/head-blocks.ts';
import { openStore, type Store } from '../projections/store.ts';
import { withPublisher } from '../roles/runtime.ts';
import { API, inProcessConfig, publishTestAccounts } from './harness/api.ts';
import { archiveEnvironment, archiveOverrides, publishMetadata } from './harness/archive.ts';
import { generateWorld, type ChainWorld } from './harness/chain-world.ts';
import { LiveClient, startLiveServer, type LiveServer } from './harness/live.ts';
import { LocalPolygonNode } from './harness/polygon-node.ts';

type EventMessage = Extract<ServerMessage, { type: 'event' }>;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are read field by field

const NOW = Math.floor(Date.now() / 1000);
const silent = createLogger('silent');

function capturingLogger(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger('info', {
    write: (line: string) => {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  return { log, lines };
}

/** The world's blocks: registrations first, then one match per block. */
function blocksOf(world: ChainWorld) {
  const blockOfTs = (ts: number) => world.firstBlock + (ts - world.timestampOf(world.firstBlock)) / 2;
  const fillBlocks = [...new Set(world.fills.map((fill) => blockOfTs(fill.ts)))].sort((a, b) => a - b);
  return { blockOfTs, registeredThrough: fillBlocks[0]! - 1, fillBlocks };
}

/** An archive in this process, on the server's log and store; `kill` is a SIGKILL: nothing it does after reaches the log or the store. */
interface RunningArchive {
  kill(): void;
  stop(): Promise<void>;
  lines: Array<Record<string, unknown>>;
}

function startArchive(config: Config, eventLog: MemoryLog, store: Store, caughtUpTo: number): Promise<RunningArchive> {
  const { log, lines } = capturingLogger();
  const abort = new AbortController();
  let dead = false;
  const never = new Promise<never>(() => {});
  return (async () => {
    const producer = await eventLog.producer();
    const names = new TopicNames(config.kafka.topicPrefix);
    const real = archiveSink({
      publisher: new EventPublisher(producer, names),
      producer,
      topics: names,
      store,
      durable: () => eventLog.committedThroughNow(config.kafka.groupId, names.all()),
    });
    const sink: ArchiveSink = {
      publish: (topicId, events) => (dead ? never : real.publish(topicId, events)),
      deadLetter: (letters) => (dead ? never : real.deadLetter(letters)),
      durable: () => (dead ? never : real.durable()),
      publishHead: (events) => (dead ? never : real.publishHead!(events)),
    };
    const deadStore: Store = new Proxy(store, {
      get: (target, property, receiver) =>
        property === 'insert'
          ? (...args: Parameters<Store['insert']>) => (dead ? never : target.insert(...args))
          : Reflect.get(target, property, receiver),
    });
    let reached: () => void = () => {};
    const caughtUp = new Promise<void>((resolve) => (reached = resolve));
    const run = runArchiveSource({
      config: config.archive!,
      log,
      store: deadStore,
      sink,
      signal: abort.signal,
      checkpointIntervalMs: 0,
      onCheckpoint: (block) => {
        if (block >= caughtUpTo) reached();
      },
    });
    run.catch(() => {});
    await Promise.race([caughtUp, run]);
    return {
      lines,
      kill() {
        dead = true;
        abort.abort();
      },
      async stop() {
        abort.abort();
        // A killed archive never finishes: what it was doing when it died stays undone.
        if (!dead) await run;
      },
    };
  })();
}

interface Chain {
  world: ChainWorld;
  node: LocalPolygonNode;
  config: Config;
  server: LiveServer;
  archive: RunningArchive;
  key: string;
  /** World blocks whose logs a test put elsewhere: mined empty. */
  used: Set<number>;
  mineThrough(block: number): void;
  /** Resolves once ingest has landed everything on the log up to now. */
  landed(): Promise<void>;
}

const chains: Chain[] = [];
afterAll(async () => {
  for (const chain of chains) {
    await chain.archive.stop().catch(() => {});
    await chain.server.close();
    await chain.node.stop();
    const store = await openStore(chain.config.clickhouse);
    await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store.close();
  }
});

async function startChain(
  label: string,
  options: { websocket: boolean; finalizedTag?: boolean; seed: number },
): Promise<Chain> {
  const world = generateWorld({ seed: options.seed, markets: 3, wallets: 4, matches: 24 });
  const { registeredThrough } = blocksOf(world);
  const node = new LocalPolygonNode();
  await node.start(0, { websocket: options.websocket });
  node.finalizedTag = options.finalizedTag ?? true;
  for (let block = world.firstBlock; block <= registeredThrough; block++)
    node.setBlock(block, world.timestampOf(block), world.blocks.get(block) ?? []);
  node.finalityDepth = 2;
  const config = inProcessConfig(
    label,
    archiveEnvironment(node, {
      POLYGON_RPC_URL: options.websocket ? `${node.url},${node.wsUrl}` : node.url,
      ARCHIVE_START_BLOCK: String(world.firstBlock),
      ARCHIVE_FINALIZED: 'true',
      ARCHIVE_CONFIRMATIONS: '2',
    }),
    { ...archiveOverrides({ decodeWorkers: 0, headPollMs: 25 }) },
  );
  const key = await withPublisher(config, silent, async ({ publisher }) => {
    // The markets' tokens, as the upstream publishes them from Gamma: the head knows them before the chain's registrations are final.
    await publisher.publish(
      'markets',
      world.markets.map((market) => ({
        type: 'tokens' as const,
        condition_id: market.conditionId,
        token1_id: market.token1.toString(),
        token2_id: market.token2.toString(),
      })),
    );
    const keys = await publishTestAccounts(
      publisher,
      [{ accountId: `${label}-pro`, plan: 'pro', keys: ['pro'] }],
      NOW - 60,
    );
    return keys.pro;
  });
  await publishMetadata(config, world);
  let archive: RunningArchive | undefined;
  const server = await startLiveServer(config, silent, {
    recordings: (onLog) => onLog,
    beside: async ({ eventLog, store }) => {
      const worker = await startIngestWorker({ config, eventLog, store, log: silent, groupId: config.kafka.groupId });
      archive = await startArchive(config, eventLog, store, registeredThrough - 2);
      return {
        stop: async () => {
          for (const chain of chains)
            if (chain.server.eventLog === eventLog) await chain.archive.stop().catch(() => {});
          await archive!.stop().catch(() => {});
          await worker.stop();
        },
      };
    },
  });
  const chain: Chain = {
    world,
    node,
    config,
    server,
    archive: archive!,
    key,
    used: new Set(),
    mineThrough(block) {
      for (let number = node.head + 1; number <= block; number++)
        node.mine(this.used.has(number) ? [] : (world.blocks.get(number) ?? []), number, world.timestampOf(number));
    },
    landed: () =>
      server.eventLog.committedThroughNow(config.kafka.groupId, new TopicNames(config.kafka.topicPrefix).all()),
  };
  chains.push(chain);
  return chain;
}

async function connect(chain: Chain): Promise<LiveClient> {
  const client = new LiveClient(
    new WebSocket(chain.server.url, [chain.config.live.protocol], {
      headers: { authorization: `Bearer ${chain.key}` },
    }),
  );
  await client.nextOf('ready');
  return client;
}

/** Reads events until one matches; returns it and every event read on the way. */
async function until(
  client: LiveClient,
  matches: (message: EventMessage) => boolean,
  seen: EventMessage[] = [],
): Promise<EventMessage> {
  for (;;) {
    const message = await client.next();
    if (message.type !== 'event') continue;
    seen.push(message);
    if (matches(message)) return message;
  }
}

/** The refs of every provisional event the client was sent so far. */
function provisionalRefs(client: LiveClient): string[] {
  return client.messages.flatMap((message) =>
    message.type === 'event' && (message.event as Json).provisional ? [(message.event as Json).ref as string] : [],
  );
}

/** Reads until each of `refs` ended; how each did (final or retracted). */
async function endingsOf(client: LiveClient, refs: readonly string[]): Promise<Map<string, string>> {
  const endings = new Map<string, string>();
  const record = (message: ServerMessage) => {
    if (message.type === 'event' && (message.event.type === 'final' || message.event.type === 'retracted'))
      endings.set(message.event.ref, message.event.type);
  };
  for (const message of client.messages) record(message);
  while (!refs.every((ref) => endings.has(ref))) record(await client.next());
  return endings;
}

const isFill = (message: EventMessage) => message.event.type === 'fill';
/** A fill of this many dollars. */
const fillOf = (message: EventMessage, usd: number) => message.event.type === 'fill' && message.event.usd === usd;
const refOf = (message: EventMessage) => (message.event as { ref?: string }).ref;

/** A fill of the world in the index-th block of fills not mined yet: its wallet, market and block, and its usd. */
function fillAt(chain: Chain, index: number) {
  const { blockOfTs, fillBlocks } = blocksOf(chain.world);
  const ahead = fillBlocks.filter((block) => block > chain.node.head);
  const fill = chain.world.fills.filter((candidate) => blockOfTs(candidate.ts) === ahead[index])[0]!;
  return { ...fill, block: blockOfTs(fill.ts), usd: Number(fill.usdMicro) / 1e6 };
}

async function restFills(chain: Chain, wallet: string): Promise<Json[]> {
  const response = await fetch(`${chain.server.origin}${API}/traders/${wallet}/fills?since=0&limit=1000`, {
    headers: { authorization: `Bearer ${chain.key}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { fills: Json[] }).fills;
}

/** Waits until REST shows a fill of the wallet of this many dollars at this time (ingest lands it, the API reads it). */
async function restFillsReach(chain: Chain, wallet: string, usd: number, ts: number): Promise<Json[]> {
  for (;;) {
    await chain.landed();
    const fills = await restFills(chain, wallet);
    if (fills.some((row) => row.usd === usd && row.ts === ts)) return fills;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('the chain head through the live plane (newHeads over a WebSocket)', () => {
  let chain: Chain;
  beforeAll(async () => {
    chain = await startChain('head-ws', { websocket: true, seed: 451 });
  });

  it('a fill at the head reaches the watcher provisionally, then final after finalization; REST has it once, the tape replays the marks', async () => {
    const fill = fillAt(chain, 0);
    const client = await connect(chain);
    const ack = await client.command({ type: 'watch', trader: fill.wallet, market: fill.conditionId });
    expect(ack).toMatchObject({ type: 'ack', of: 'watch', recording: { state: 'on' } });
    const tapeId = (ack as Json).recording.tape_id as string;
    await until(client, (message) => message.event.type === 'session');

    chain.mineThrough(fill.block);
    const provisional = await until(client, isFill);
    expect(provisional.event).toMatchObject({ type: 'fill', provisional: true, usd: fill.usd, side: fill.side });
    const ref = refOf(provisional)!;
    expect(ref).toMatch(new RegExp(`^${fill.block}:`));
    // Nothing is stored before the block is final.
    expect(await restFills(chain, fill.wallet)).toEqual([]);

    // The node finalizes two blocks below its head: every provisional event sent (the market's prints too) ends final.
    chain.mineThrough(fill.block + 2);
    const endings = await endingsOf(client, provisionalRefs(client));
    expect([...endings.values()].every((state) => state === 'final')).toBe(true);
    expect(endings.get(ref)).toBe('final');

    // REST shows the fill once its final copy landed; the plane did not send it a second time.
    const stored = await restFillsReach(chain, fill.wallet, fill.usd, fill.ts);
    expect(stored.map((row) => row.usd)).toEqual([fill.usd]);
    await chain.server.feedCaughtUp();
    await client.command({ type: 'unwatch', trader: fill.wallet, market: fill.conditionId });
    const fills = client.messages.filter(
      (message): message is EventMessage => message.type === 'event' && message.event.type === 'fill',
    );
    expect(fills).toHaveLength(1);

    // The tape holds what the client was sent: the provisional fill, then its final mark.
    let events: Json[] = [];
    for (;;) {
      await chain.landed();
      const response = await fetch(`${chain.server.origin}${API}/tapes/${tapeId}/events?limit=200`, {
        headers: { authorization: `Bearer ${chain.key}` },
      });
      if (response.status === 200) {
        events = ((await response.json()) as { events: Json[] }).events;
        if (events.at(-1)?.type === 'session' && events.at(-1)?.state === 'stop') break;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const sent = client.messages
      .filter((message): message is EventMessage => message.type === 'event')
      .map((message) => message.event);
    expect(events).toEqual(sent);
    expect(events.find((event) => event.type === 'fill')).toMatchObject({ provisional: true, ref });
    expect(events.filter((event) => event.type === 'final').map((event) => event.ref)).toContain(ref);
    await client.close();
  });

  it('a 2-block reorg at the head retracts the provisional fill and streams the replacing block as new provisional events', async () => {
    const fill = fillAt(chain, 0);
    const replacement = fillAt(chain, 1);
    const client = await connect(chain);
    await client.command({ type: 'follow', trader: fill.wallet });
    chain.mineThrough(fill.block);
    const dropped = await until(client, (message) => fillOf(message, fill.usd));
    expect(dropped.event).toMatchObject({ provisional: true });
    chain.mineThrough(fill.block + 1);

    // The two newest blocks are replaced: the fill's block is now empty, the next one carries another fill of the trader's.
    chain.used.add(replacement.block);
    const replaced = chain.world.blocks.get(replacement.block)!.map((log) => ({
      ...log,
      blockNumber: `0x${(fill.block + 1).toString(16)}`,
      blockTimestamp: `0x${chain.world.timestampOf(fill.block + 1).toString(16)}`,
    }));
    const wanted = replacement.wallet === fill.wallet;
    if (!wanted) await client.command({ type: 'follow', trader: replacement.wallet });
    chain.node.reorg(
      fill.block,
      new Map([
        [fill.block, []],
        [fill.block + 1, replaced],
      ]),
    );
    chain.node.announce();
    const retraction = await until(
      client,
      (message) => message.event.type === 'retracted' && refOf(message) === refOf(dropped),
    );
    expect(retraction.market).toBe(fill.conditionId);
    const fresh = await until(client, (message) => fillOf(message, replacement.usd));
    expect(fresh.event).toMatchObject({ provisional: true });
    expect(refOf(fresh)).toMatch(new RegExp(`^${fill.block + 1}:`));
    chain.mineThrough(fill.block + 3);
    await until(client, (message) => message.event.type === 'final' && refOf(message) === refOf(fresh));

    // Only final facts are stored: the retracted fill is not in REST, its replacement is.
    const stored = await restFillsReach(
      chain,
      replacement.wallet,
      replacement.usd,
      chain.world.timestampOf(fill.block + 1),
    );
    expect(stored.map((row) => row.usd)).toContain(replacement.usd);
    const droppedStored = (await restFills(chain, fill.wallet)).filter(
      (row) => row.usd === fill.usd && row.ts === fill.ts,
    );
    expect(droppedStored).toEqual([]);
    await client.close();
  });

  it('a kill -9 of the archive with provisional events in flight: after the restart each ends once (final or retracted), none twice', async () => {
    const stays = fillAt(chain, 0);
    const goes = fillAt(chain, 1);
    // Finality further behind: both blocks are still open when the archive dies.
    chain.node.finalityDepth = 4;
    expect(goes.block).toBeGreaterThan(chain.node.head);
    const client = await connect(chain);
    await client.command({ type: 'follow', trader: stays.wallet });
    if (goes.wallet !== stays.wallet) await client.command({ type: 'follow', trader: goes.wallet });
    chain.mineThrough(goes.block);
    const first = await until(client, (message) => fillOf(message, stays.usd));
    const second = await until(client, (message) => fillOf(message, goes.usd));
    expect(first.event).toMatchObject({ provisional: true });
    expect(second.event).toMatchObject({ provisional: true });

    chain.archive.kill();
    // While it is down: the second fill's block is replaced (empty), and the chain finalizes past both.
    chain.node.reorg(goes.block, new Map([[goes.block, []]]));
    chain.mineThrough(goes.block + 5);
    chain.archive = await startArchive(chain.config, chain.server.eventLog, chain.server.store, stays.block);
    const endOf = async (ref: string) =>
      until(client, (message) => ['final', 'retracted'].includes(message.event.type) && refOf(message) === ref);
    expect((await endOf(refOf(first)!)).event.type).toBe('final');
    expect((await endOf(refOf(second)!)).event.type).toBe('retracted');
    expect(chain.archive.lines.some((line) => String(line.msg).includes('left open by the previous run'))).toBe(true);

    await chain.server.feedCaughtUp();
    const events = client.messages.filter((message): message is EventMessage => message.type === 'event');
    for (const ref of [refOf(first), refOf(second)]) {
      expect(events.filter((message) => refOf(message) === ref && (message.event as Json).provisional)).toHaveLength(1);
      expect(events.filter((message) => refOf(message) === ref && !(message.event as Json).provisional)).toHaveLength(
        1,
      );
    }
    // The surviving fill is stored once; the replaced one never.
    const stored = await restFillsReach(chain, stays.wallet, stays.usd, stays.ts);
    expect(stored.filter((row) => row.usd === stays.usd && row.ts === stays.ts)).toHaveLength(1);
    const goneStored = (await restFills(chain, goes.wallet)).filter(
      (row) => row.usd === goes.usd && row.ts === goes.ts,
    );
    expect(goneStored).toEqual([]);
    await client.close();
  });
});

describe('a restart of the plane with provisional events open (the client resumes them)', () => {
  it('every open event the stopped plane sent ends final or retracted exactly once on the new plane', async () => {
    const chain = await startChain('head-resume', { websocket: true, seed: 454 });
    const { eventLog, store } = chain.server;
    const planeOn = async () => {
      const plane = await startLiveServer(chain.config, silent, { on: { eventLog, store } });
      onTestFinished(() => plane.close());
      return plane;
    };
    const connectTo = async (plane: LiveServer) => {
      const client = new LiveClient(
        new WebSocket(plane.url, [chain.config.live.protocol], { headers: { authorization: `Bearer ${chain.key}` } }),
      );
      await client.nextOf('ready');
      return client;
    };
    // Three fills in ascending blocks: the first is final while no plane runs, the last is replaced by a
    // reorg then, and the middle one is still open when the new plane starts.
    const [finalWhileDown, openAtStart, retractedWhileDown] = [0, 1, 2].map((index) => fillAt(chain, index)) as [
      ReturnType<typeof fillAt>,
      ReturnType<typeof fillAt>,
      ReturnType<typeof fillAt>,
    ];
    chain.node.finalityDepth = 50;
    const first = await planeOn();
    const before = await connectTo(first);
    for (const wallet of new Set([finalWhileDown.wallet, openAtStart.wallet, retractedWhileDown.wallet]))
      await before.command({ type: 'follow', trader: wallet });
    chain.mineThrough(retractedWhileDown.block);
    const sent = new Map<string, EventMessage>();
    for (const fill of [finalWhileDown, openAtStart, retractedWhileDown]) {
      const message = await until(before, (candidate) => fillOf(candidate, fill.usd));
      expect(message.event).toMatchObject({ provisional: true });
      sent.set(refOf(message)!, message);
    }

    // The plane stops (a deploy): its clients are told, and nothing it holds survives it.
    const stopping = before.closed;
    await first.app.close();
    expect(await stopping).toMatchObject({ code: 1001 });
    const endedBefore = new Set(
      before.messages.flatMap((message) =>
        message.type === 'event' && (message.event.type === 'final' || message.event.type === 'retracted')
          ? [message.event.ref]
          : [],
      ),
    );
    const open = provisionalRefs(before).filter((ref) => !endedBefore.has(ref));
    for (const ref of sent.keys()) expect(open).toContain(ref);

    // While no plane runs: the last block is replaced (empty), and the chain finalizes the first fill's block.
    const [refFinal, refOpen, refRetracted] = [...sent.keys()] as [string, string, string];
    chain.node.reorg(retractedWhileDown.block, new Map([[retractedWhileDown.block, []]]));
    chain.node.finalityDepth = retractedWhileDown.block - finalWhileDown.block;
    chain.node.announce();
    // The archive writes each block's end to the store once its mark is out.
    for (;;) {
      const ends = await readHeadBlockEnds(store, [finalWhileDown.block, retractedWhileDown.block]);
      const stateOf = (ref: string) =>
        ends.find((end) => ref.startsWith(`${end.block}:${end.hash.slice(2, 18)}:`))?.state;
      if (stateOf(refFinal) === 'final' && stateOf(refRetracted) === 'retracted') break;
      await new Promise((resolve) => setImmediate(resolve));
    }

    // A new plane over the same log and store; the client connects again and names what it holds open.
    const second = await planeOn();
    const after = await connectTo(second);
    const never = `${retractedWhileDown.block + 10_000}:${'0'.repeat(16)}:0`;
    expect(await after.command({ type: 'resume', id: 'r', refs: [...open, never, refFinal] })).toMatchObject({
      type: 'ack',
      id: 'r',
      of: 'resume',
    });
    const resolved = new Map<string, string[]>();
    const take = (message: ServerMessage) => {
      if (message.type === 'resolved') resolved.set(message.ref, [...(resolved.get(message.ref) ?? []), message.state]);
    };
    const blockOf = (ref: string) => Number(ref.split(':')[0]);
    const finalBlock = finalWhileDown.block;
    const endOf = (ref: string) => (blockOf(ref) === retractedWhileDown.block ? 'retracted' : 'final');
    const pending = open.filter((ref) => blockOf(ref) > finalBlock && blockOf(ref) < retractedWhileDown.block);
    expect(pending).toContain(refOpen);
    // What the store knows is answered right after the ack (the plane never saw those marks).
    for (let count = 0; count < open.length + 1 - pending.length; count++) take(await after.nextOf('resolved'));
    for (const ref of open.filter((candidate) => !pending.includes(candidate)))
      expect(resolved.get(ref), ref).toEqual([endOf(ref)]);
    expect(resolved.get(refFinal)).toEqual(['final']);
    expect(resolved.get(refRetracted)).toEqual(['retracted']);
    // A ref of a block no archive published never happened.
    expect(resolved.get(never)).toEqual(['retracted']);
    for (const ref of pending) expect(resolved.has(ref)).toBe(false);

    // The open ones end when their block does.
    chain.node.finalityDepth = 0;
    chain.mineThrough(retractedWhileDown.block + 1);
    while (!pending.every((ref) => resolved.has(ref))) take(await after.next());
    await second.feedCaughtUp();
    // Exactly once each, and nothing else on the new connection.
    const answers = after.messages.filter((message) => message.type === 'resolved');
    expect(answers).toHaveLength(open.length + 1);
    expect(after.messages.filter((message) => message.type === 'event')).toEqual([]);
    for (const ref of open)
      expect(
        answers.filter((message) => message.ref === ref),
        ref,
      ).toEqual([expect.objectContaining({ state: endOf(ref) })]);
    expect(resolved.get(refOpen)).toEqual(['final']);
    await after.close();
  });
});

describe('the chain head without WebSocket, and without the finalized tag', () => {
  it('a node without WebSocket: the head is polled, one eth_getLogs pair per new block; provisional then final', async () => {
    const chain = await startChain('head-poll', { websocket: false, seed: 452 });
    expect(chain.archive.lines.some((line) => String(line.msg).includes('polling the head'))).toBe(true);
    const fill = fillAt(chain, 0);
    const client = await connect(chain);
    await client.command({ type: 'follow', trader: fill.wallet });
    const callsBefore = chain.node.calls.length;
    chain.mineThrough(fill.block);
    const provisional = await until(client, (message) => fillOf(message, fill.usd));
    expect(provisional.event).toMatchObject({ provisional: true });
    chain.mineThrough(fill.block + 2);
    await until(client, (message) => message.event.type === 'final' && refOf(message) === refOf(provisional));
    // No subscription was asked for; the new blocks were read one at a time.
    const calls = chain.node.calls.slice(callsBefore);
    expect(calls.some((call) => call.method === 'eth_subscribe')).toBe(false);
    const single = calls.filter(
      (call) =>
        call.method === 'eth_getLogs' &&
        (call.params[0] as Json).fromBlock === `0x${fill.block.toString(16)}` &&
        (call.params[0] as Json).toBlock === `0x${fill.block.toString(16)}`,
    );
    expect(single.length).toBeGreaterThanOrEqual(2);
    await client.close();
  });

  it('a node without the finalized tag: the archive falls back to confirmations and says so (log line, /readyz, metric)', async () => {
    const chain = await startChain('head-no-tag', { websocket: true, finalizedTag: false, seed: 453 });
    const line = chain.archive.lines.find((candidate) => String(candidate.msg).startsWith('archive finality'));
    expect(line).toMatchObject({ level: 40, finality: 'confirmations', confirmations: 2 });
    const ready = (await (await fetch(`${chain.server.origin}/readyz`)).json()) as Json;
    expect(String(ready.archive_finality)).toMatch(/^confirmations: blocks 2 below the head are final/);
    const metrics = (await exposition()).body;
    expect(metrics).toContain('trader_analytics_archive_finality{mode="confirmations"} 1');
    expect(metrics).toContain('trader_analytics_archive_finality{mode="finalized"} 0');

    const fill = fillAt(chain, 0);
    const client = await connect(chain);
    await client.command({ type: 'follow', trader: fill.wallet });
    chain.mineThrough(fill.block);
    const provisional = await until(client, (message) => fillOf(message, fill.usd));
    chain.mineThrough(fill.block + 2);
    await until(client, (message) => message.event.type === 'final' && refOf(message) === refOf(provisional));
    await client.close();
  });
});
