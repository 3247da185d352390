/**
 * The archive's head stage: the blocks above the final one, read as they appear and published as
 * provisional on `chain.head` (ingest/contract/head.ts), for the live plane. Nothing it reads is stored
 * as a fact: the final stage (archive.ts) publishes the same events once their block is final.
 *
 * - New blocks: a `newHeads` subscription over viem's WebSocket transport where an endpoint is a ws(s) URL
 *   (with a slow poll beside it, which also fills the gap after the socket reconnects), else a poll of the
 *   head every `headPollMs`. Each new block is read with one eth_getLogs pair (the final stage's filters)
 *   over that block alone, checked against its header's hash, and decoded by the same decoder and facts.
 * - Reorgs: each block must name the previous one's hash as its parent; when it does not, the blocks of
 *   the replaced branch are walked back to the common ancestor, each published one is retracted (a
 *   `retracted` mark), and the new branch is read as new provisional events.
 * - Finality (finality.ts): every block with published events gets a `final` mark when the final block
 *   reaches it on the chain it was read on, or a `retracted` mark when the final chain holds another hash.
 * - Restarts: a block's (number, hash) is written to `head_blocks` before its events are published and
 *   marked resolved (with its end) after its mark is; a restarted stage resolves every block its
 *   predecessor left open, and a restarted live plane answers its clients' open events from it.
 *
 * Legs and fills whose market the token directory does not know yet are left out here (the final stage
 * waits for them), as are registrations and resolutions (facts of the final stage alone).
 */
import { createPublicClient, webSocket } from 'viem';
import type { ArchiveConfig } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import { BACKGROUND_READ, type Store } from '../../../projections/store.ts';
import { headMarks, headReorgs, recordFreshness, recordHeadBlock } from '../../../metrics/registry.ts';
import { headRef, type HeadEventInput } from '../../contract/head.ts';
import type { DecodedLog, RawLog } from './decode.ts';
import type { LogDecoder } from './decode-pool.ts';
import { factsOf, principalsOf, type ArchiveContracts } from './facts.ts';
import type { FinalBlock, Finality } from './finality.ts';
import {
  AbortedError,
  headerOf,
  type BlockHeader,
  type GetLogsFilter,
  type PolygonRpc,
  type RawHeader,
} from './rpc.ts';
import type { TokenDirectory } from './tokens.ts';

/** Where the head stage's events go. */
export interface HeadSink {
  publishHead(events: readonly HeadEventInput[]): Promise<void>;
}

export interface HeadStageOptions {
  config: ArchiveConfig;
  rpc: PolygonRpc;
  finality: Finality;
  decoder: LogDecoder;
  directory: TokenDirectory;
  contracts: ArchiveContracts;
  store: Store;
  sink: HeadSink;
  log: Logger;
  signal: AbortSignal;
  /** The final stage's eth_getLogs filters over a block range. */
  filters: (fromBlock: number, toBlock: number) => GetLogsFilter[];
  /** The final block the stage learned (the final stage reads on at once instead of at its next poll). */
  onFinal?: (block: number) => void;
  now?: () => number;
}

/** A block the stage read, above the final one. */
interface HeadBlock {
  number: number;
  hash: string;
  parentHash: string;
  ts: number;
  seenMs: number;
}

/** Decoded kinds whose facts are provisional events (fills, prints, legs); the rest are the final stage's. */
const HEAD_KINDS = new Set<DecodedLog['kind']>([
  'orderFilled',
  'split',
  'merge',
  'redemption',
  'converted',
  'v2Action',
]);
/** Reorgs handled within one pass before the pass gives way to the next (a chain still being replaced). */
const REORGS_PER_PASS = 4;

/** The node answered one block's logs from another fork than its header: read it again on the next pass. */
class HeadRaced extends Error {}

const blockKey = (block: number, hash: string) => `${block}:${hash}`;

/** The header a newHeads notification carries (null: not one). */
function notifiedHeader(data: unknown): BlockHeader | undefined {
  const result = (data as { result?: RawHeader } | null)?.result;
  if (!result || typeof result.number !== 'string' || typeof result.hash !== 'string') return undefined;
  try {
    return headerOf(result);
  } catch {
    return undefined;
  }
}

export class HeadStage {
  /** The blocks read above the final one (and the final one itself, the parent of the next), by number. */
  readonly #chain = new Map<number, HeadBlock>();
  /** Blocks with published events and no mark yet, by `number:hash` (restored ones too). */
  readonly #open = new Map<string, HeadBlock>();
  #pass: Promise<void> | null = null;
  #again = false;
  /** The newest header a newHeads notification brought, taken by the next pass. */
  #hint: BlockHeader | null = null;
  /** The newest header a pass acted on, and when the final block was last asked for. */
  #latest: BlockHeader | null = null;
  #finalAskedAt = Number.NEGATIVE_INFINITY;
  #final: FinalBlock | null = null;
  readonly counters = { blocks: 0, events: 0, final: 0, retracted: 0, reorgs: 0 };

  constructor(private readonly options: HeadStageOptions) {}

  #now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Follows the head until the signal aborts. */
  async run(): Promise<void> {
    const { config, signal, log } = this.options;
    await this.#restore();
    const wsUrl = config.rpcUrls.find((url) => url.startsWith('ws'));
    const stopSubscription = wsUrl === undefined ? () => {} : this.#subscribe(wsUrl);
    log.info(
      wsUrl === undefined
        ? { mode: 'poll', pollMs: config.headPollMs }
        : { mode: 'newHeads', pollMs: config.pollMs, endpoint: new URL(wsUrl).host },
      wsUrl === undefined
        ? 'archive head stage: polling the head (no WebSocket endpoint): one eth_getLogs pair per new block'
        : 'archive head stage: newHeads over WebSocket, one eth_getLogs pair per new block',
    );
    // Without a subscription the poll is the head stage; with one it fills what the socket missed.
    const timer = setInterval(() => this.tick(), wsUrl === undefined ? config.headPollMs : config.pollMs);
    this.tick();
    try {
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      clearInterval(timer);
      stopSubscription();
      await this.#pass?.catch(() => {});
    }
  }

  /** A new head may be there (`header`: a notification's): one pass at a time, and one more after it when asked meanwhile. */
  tick(header?: BlockHeader): void {
    if (this.options.signal.aborted) return;
    if (header !== undefined && (this.#hint === null || header.number >= this.#hint.number)) this.#hint = header;
    if (this.#pass !== null) {
      this.#again = true;
      return;
    }
    this.#pass = (async () => {
      do {
        this.#again = false;
        try {
          await this.#advance();
        } catch (error) {
          if (error instanceof AbortedError || this.options.signal.aborted) return;
          if (!(error instanceof HeadRaced))
            this.options.log.warn({ err: error }, 'archive head stage: a pass failed; the next one reads again');
        }
      } while (this.#again && !this.options.signal.aborted);
    })().finally(() => {
      this.#pass = null;
    });
  }

  /** eth_subscribe newHeads through viem's WebSocket transport; subscribed again after a failure. */
  #subscribe(url: string): () => void {
    const { log, signal, config } = this.options;
    const transport = createPublicClient({
      transport: webSocket(url, { timeout: config.timeoutMs, retryCount: 0, reconnect: true }),
    }).transport;
    let unsubscribe: (() => Promise<unknown>) | null = null;
    let retry: NodeJS.Timeout | null = null;
    const again = (error: unknown) => {
      if (signal.aborted) return;
      log.warn(
        { err: error instanceof Error ? error.message.split('\n')[0] : String(error) },
        'archive head stage: newHeads subscription failed; subscribing again (the poll reads meanwhile)',
      );
      unsubscribe = null;
      retry ??= setTimeout(() => {
        retry = null;
        void watch();
      }, config.pollMs);
    };
    const watch = async () => {
      try {
        const subscription = await transport.subscribe({
          params: ['newHeads'],
          onData: (data) => this.tick(notifiedHeader(data)),
          onError: again,
        });
        unsubscribe = subscription.unsubscribe;
        if (signal.aborted) void subscription.unsubscribe().catch(() => {});
      } catch (error) {
        again(error);
      }
    };
    void watch();
    return () => {
      if (retry) clearTimeout(retry);
      void unsubscribe?.().catch(() => {});
      void transport
        .getRpcClient()
        .then((socket) => socket.close())
        .catch(() => {});
    };
  }

  /** Blocks a previous run published and left without a mark. */
  async #restore(): Promise<void> {
    const rows = await this.options.store.query<{ block: string | number; block_hash: string; block_ts: number }>(
      'SELECT block, block_hash, block_ts FROM {db:Identifier}.head_blocks FINAL WHERE source = {source:String} AND resolved = 0 ORDER BY block',
      { source: this.options.config.source },
      BACKGROUND_READ,
    );
    for (const row of rows) {
      const block = {
        number: Number(row.block),
        hash: row.block_hash,
        parentHash: '',
        ts: row.block_ts,
        seenMs: this.#now(),
      };
      this.#open.set(blockKey(block.number, block.hash), block);
    }
    if (rows.length > 0)
      this.options.log.info(
        { blocks: rows.map((row) => Number(row.block)) },
        'archive head stage: blocks of provisional events left open by the previous run are resolved as they become final',
      );
  }

  async #advance(): Promise<void> {
    const { rpc, finality, config } = this.options;
    const hinted = this.#hint;
    this.#hint = null;
    const latest = hinted ?? (await rpc.latestHeader());
    const changed = this.#latest === null || latest.number !== this.#latest.number || latest.hash !== this.#latest.hash;
    this.#latest = latest;
    // The final block moves with new blocks; asked at least every poll besides.
    if (changed || this.#final === null || this.#now() - this.#finalAskedAt >= config.pollMs) {
      this.#final = await finality.final(latest.number);
      this.#finalAskedAt = this.#now();
      this.options.onFinal?.(this.#final.number);
    }
    const final = this.#final;
    for (let reorgs = 0; ; reorgs++) {
      const replaced = await this.#read(latest, final);
      if (!replaced || reorgs >= REORGS_PER_PASS) break;
    }
    await this.#resolve(final);
    // The base of the chain: nothing above the final block is kept further back than the stage follows.
    const oldest = Math.max(final.number, latest.number - config.headMaxBlocks);
    for (const number of this.#chain.keys()) if (number < oldest) this.#chain.delete(number);
  }

  /** Reads the blocks after the last one read up to the latest; true when a reorg cut the pass short. */
  async #read(latest: BlockHeader, final: FinalBlock): Promise<boolean> {
    const { rpc, config } = this.options;
    const tip = this.#tip();
    // The latest block replaces one read already (a reorg at the same height), or the chain got shorter.
    const known = this.#chain.get(latest.number);
    if ((known !== undefined && known.hash !== latest.hash) || (tip !== null && latest.number < tip)) {
      await this.#reorg(Math.min(latest.number, tip ?? latest.number), final);
      return true;
    }
    const from = Math.max(
      tip === null ? final.number + 1 : tip + 1,
      final.number + 1,
      latest.number - config.headMaxBlocks + 1,
    );
    for (let number = from; number <= latest.number; number++) {
      const header = number === latest.number ? latest : await rpc.blockHeader(number);
      const parent = this.#chain.get(number - 1);
      if (parent !== undefined && header.parentHash !== '' && header.parentHash !== parent.hash) {
        await this.#reorg(number - 1, final);
        return true;
      }
      await this.#readBlock(header);
    }
    return false;
  }

  #tip(): number | null {
    let tip: number | null = null;
    for (const number of this.#chain.keys()) if (tip === null || number > tip) tip = number;
    return tip;
  }

  /** The block at `from` (and maybe below) is not the node's any more: retracts back to the common ancestor. */
  async #reorg(from: number, final: FinalBlock): Promise<void> {
    this.counters.reorgs++;
    headReorgs.inc();
    const retracted: number[] = [];
    for (let number = this.#tip() ?? from; number > final.number; number--) {
      const ours = this.#chain.get(number);
      if (ours === undefined) break;
      if (number <= from) {
        const header = await this.options.rpc.blockHeader(number);
        if (header.hash === ours.hash) break;
      }
      this.#chain.delete(number);
      retracted.push(number);
      if (this.#open.has(blockKey(number, ours.hash))) await this.#mark(ours, 'retracted', final.number);
    }
    this.options.log.info(
      { blocks: retracted, final: final.number },
      'archive head stage: a reorg replaced blocks above the final one; their provisional events are retracted',
    );
  }

  async #readBlock(header: BlockHeader): Promise<void> {
    const { rpc, decoder, filters, contracts, directory } = this.options;
    const seenMs = this.#now();
    const answers = await Promise.all(filters(header.number, header.number).map((filter) => rpc.getLogs(filter)));
    const logs = answers.flat();
    for (const log of logs)
      if (log.blockHash !== undefined && log.blockHash.toLowerCase() !== header.hash) throw new HeadRaced();
    const live = logs.filter((log: RawLog) => !log.removed);
    const decoded: DecodedLog[] = [];
    for (const decoding of await decoder.decode(live))
      if (
        decoding !== null &&
        decoding.kind !== 'decodeError' &&
        (HEAD_KINDS.has(decoding.kind) || decoding.kind === 'transfer1155' || decoding.kind === 'v2Router')
      )
        decoded.push(decoding);
    decoded.sort((a, b) => a.logIndex - b.logIndex);
    const principals = principalsOf(decoded, contracts);
    const block: HeadBlock = {
      number: header.number,
      hash: header.hash,
      parentHash: header.parentHash,
      ts: header.timestamp,
      seenMs,
    };
    const at = { block: block.number, block_hash: block.hash, block_ts: block.ts, seen_ms: seenMs };
    const events: HeadEventInput[] = [];
    for (const log of decoded) {
      if (!HEAD_KINDS.has(log.kind)) continue;
      const outcome = factsOf(log, header.timestamp, directory, contracts, principals.get(log.txHash));
      if (outcome.kind !== 'events') continue;
      for (const fill of outcome.fills)
        events.push({ type: 'fill', ...at, ref: headRef(block.number, block.hash, events.length), fill });
      for (const trade of outcome.trades)
        events.push({ type: 'trade', ...at, ref: headRef(block.number, block.hash, events.length), trade });
      for (const leg of outcome.legs)
        events.push({ type: 'leg', ...at, ref: headRef(block.number, block.hash, events.length), leg });
    }
    this.#chain.set(block.number, block);
    this.counters.blocks++;
    recordHeadBlock(block.ts, this.#now());
    if (events.length === 0) return;
    // Written before the events go out: whatever happens next, a run of the stage will mark this block.
    await this.#remember(block, 'open');
    this.#open.set(blockKey(block.number, block.hash), block);
    await this.options.sink.publishHead(events);
    this.counters.events += events.length;
    for (const _ of events) recordFreshness('published', 'provisional', block.ts, this.#now());
  }

  /** Marks every open block at or below the final one: final when the final chain holds its hash, else retracted. */
  async #resolve(final: FinalBlock): Promise<void> {
    const due = [...this.#open.values()]
      .filter((block) => block.number <= final.number)
      .sort((a, b) => a.number - b.number);
    if (due.length === 0) return;
    // The chain read is the final one's when the final block is on it (its parents link every block below).
    const finalHash = final.hash ?? (await this.options.rpc.blockHeader(final.number)).hash;
    const linked = this.#chain.get(final.number)?.hash === finalHash;
    for (const block of due) {
      const onChain = linked && this.#chain.get(block.number)?.hash === block.hash;
      const canonical = onChain || (await this.options.rpc.blockHeader(block.number)).hash === block.hash;
      await this.#mark(block, canonical ? 'final' : 'retracted', final.number);
    }
  }

  async #mark(block: HeadBlock, state: 'final' | 'retracted', finalized: number): Promise<void> {
    await this.options.sink.publishHead([
      {
        type: 'mark',
        block: block.number,
        block_hash: block.hash,
        block_ts: block.ts,
        seen_ms: block.seenMs,
        state,
        finalized,
      },
    ]);
    this.#open.delete(blockKey(block.number, block.hash));
    this.counters[state === 'final' ? 'final' : 'retracted']++;
    headMarks.inc({ state });
    await this.#remember(block, state);
  }

  /** `open` before the block's events are published; its end after its mark is. */
  async #remember(block: HeadBlock, state: 'open' | 'final' | 'retracted'): Promise<void> {
    const { store, config } = this.options;
    const resolved = state === 'open' ? 0 : 1;
    await store.insert(
      'head_blocks',
      [
        {
          source: config.source,
          block: block.number,
          block_hash: block.hash,
          block_ts: block.ts,
          resolved,
          state: state === 'open' ? '' : state,
        },
      ],
      `head-block-${config.source}-${block.number}-${block.hash}-${resolved}`,
    );
  }

  /** Blocks with published events and no mark yet (tests and the stop line read it). */
  get open(): number {
    return this.#open.size;
  }
}
