/**
 * A local Polygon JSON-RPC node for the archive's tests: serves eth_blockNumber, eth_getBlockByNumber
 * (numbers, `latest`, `finalized`) and eth_getLogs (address and topic filters) from logs the test gives it
 * (recorded real logs, or logs the test encoded). Faults are injected per request: JSON-RPC errors, HTTP 429,
 * "range too large" refusals, slow answers (timeouts), and going away (the socket closed without an answer).
 * Blocks chain by hash (each header names its parent's); `reorg(from)` replaces every block from there on
 * with blocks of new hashes (and, optionally, new logs), as a deep reorg does; `logBlockHash` makes the logs
 * name another block hash than the headers (a node read while a reorg is under way).
 *
 * The chain's head (the archive's head stage): `start({ websocket: true })` also answers JSON-RPC over a
 * WebSocket on the same port (`wsUrl`), with `eth_subscribe` `newHeads`; `mine` adds a block at the head and
 * sends its header to the subscribers, as does `announce` after a reorg. `finalityDepth` puts the
 * `finalized` block that far below the head; `finalizedTag = false` is a node that does not know the tag.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { RawLog } from '../../ingest/sources/archive/decode.ts';

export type Fault = 'error' | '429' | 'range' | 'slow' | 'hangup';

export interface RpcCall {
  method: string;
  params: unknown[];
}

interface Block {
  timestamp: number;
  logs: RawLog[];
  /** The hash recorded logs name (real blocks keep their own hash until a reorg replaces them). */
  recordedHash: string | undefined;
}

const hex = (value: number) => `0x${value.toString(16)}`;

export class LocalPolygonNode {
  private server: Server | undefined;
  private readonly blocks = new Map<number, Block>();
  /** Young blocks' logs as a fork shows them (a reorg replaces them with the canonical ones once deep). */
  private readonly forkLogs = new Map<number, RawLog[]>();
  head = 0;
  /** The head moves this many blocks on every eth_blockNumber (the chain growing while the archive reads). */
  headStep = 0;
  /** Blocks within this many of the head are served from the fork (they are replaced once deeper). */
  reorgDepth = 0;
  /** Refuse eth_getLogs over more blocks than this (-32005, like Infura's 10,000-results limit). */
  maxRange = Number.POSITIVE_INFINITY;
  /**
   * The block hash eth_getLogs names in a block's logs (called once per block and call; undefined: the logs as
   * given, recorded ones with their hash, generated ones without). Lets a test serve logs of another fork than
   * the headers.
   */
  logBlockHash: (block: number) => string | undefined = () => undefined;
  /** Decides a fault for a call (null: answer normally). */
  fault: (call: RpcCall, serial: number) => Fault | null = () => null;
  slowMs = 2_000;
  /** The Retry-After a 429 carries (seconds, or an HTTP date). */
  retryAfter = '1';
  readonly calls: RpcCall[] = [];
  /** When each call arrived (performance.now(), ms), by the calls' order. */
  readonly callTimes: number[] = [];
  /** Blocks whose logs were ever served from the fork. */
  readonly servedFork = new Set<number>();
  private port = 0;
  /** Whether the node knows the `finalized` block tag (an older client does not: -32602). */
  finalizedTag = true;
  /** The finalized block lies this many blocks below the head (null: max(reorgDepth, 1)). */
  finalityDepth: number | null = null;
  private sockets: WebSocketServer | undefined;
  /** newHeads subscriptions: id → socket. */
  private readonly subscribers = new Map<string, WebSocket>();
  private subscriptionSerial = 0;
  /** When each block was first served as the head (performance.now(), ms), by `mine`. */
  readonly minedAt = new Map<number, number>();
  /** Blocks from which a reorg replaced the chain, in order: a block's hash says how many replaced it. */
  private readonly reorgs: number[] = [];
  /**
   * The numbers of the blocks with logs (either chain), ascending; rebuilt after a change. eth_getLogs
   * binary-searches it: a benchmark's node shares the machine with the archive it serves, and a remote
   * node's CPU would not be the archive's.
   */
  private numbersWithLogs: number[] | null = null;

  setBlock(number: number, timestamp: number, logs: RawLog[]): void {
    this.blocks.set(number, {
      timestamp,
      logs,
      recordedHash: logs.find((log) => log.blockHash !== undefined)?.blockHash?.toLowerCase(),
    });
    this.head = Math.max(this.head, number);
    this.numbersWithLogs = null;
  }

  /** The hash of a block on the current chain: its number, and how many reorgs replaced it. */
  hashOf(number: number): string {
    const generation = this.reorgs.filter((from) => from <= number).length;
    const recorded = this.blocks.get(number)?.recordedHash;
    if (generation === 0 && recorded !== undefined) return recorded;
    return `0x${generation.toString(16).padStart(8, '0')}${number.toString(16).padStart(56, '0')}`;
  }

  /**
   * A reorg: every block from `from` on gets a new hash (its parent's too, from `from + 1` on); `logs` replaces
   * the logs of the blocks it names.
   */
  reorg(from: number, logs: ReadonlyMap<number, RawLog[]> = new Map()): void {
    this.reorgs.push(from);
    for (const [number, blockLogs] of logs)
      this.setBlock(number, this.blocks.get(number)?.timestamp ?? 1_767_556_800 + number * 2, blockLogs);
  }

  setFork(number: number, logs: RawLog[]): void {
    this.forkLogs.set(number, logs);
    this.numbersWithLogs = null;
  }

  /** Block numbers from `from` to `to` (inclusive) that have a block or fork entry, ascending. */
  private numbersBetween(from: number, to: number): number[] {
    this.numbersWithLogs ??= [...new Set([...this.blocks.keys(), ...this.forkLogs.keys()])].sort((a, b) => a - b);
    const numbers = this.numbersWithLogs;
    let low = 0;
    let high = numbers.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (numbers[middle]! < from) low = middle + 1;
      else high = middle;
    }
    const found: number[] = [];
    for (let index = low; index < numbers.length && numbers[index]! <= to; index++) found.push(numbers[index]!);
    return found;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get wsUrl(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  async start(port = 0, options: { websocket?: boolean } = {}): Promise<void> {
    this.server = createServer((request, response) => void this.handle(request, response));
    if (options.websocket) {
      this.sockets = new WebSocketServer({ server: this.server });
      this.sockets.on('connection', (socket) => {
        socket.on('message', (data) => this.handleSocket(socket, data.toString()));
        socket.on('close', () => {
          for (const [id, subscriber] of this.subscribers) if (subscriber === socket) this.subscribers.delete(id);
        });
      });
    }
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server!.address() as AddressInfo).port;
  }

  /** The node goes away (connections refused, sockets closed) until `restart()`. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const sockets = this.sockets;
    this.sockets = undefined;
    this.subscribers.clear();
    if (sockets) {
      for (const client of sockets.clients) client.terminate();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
    }
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async restart(options: { websocket?: boolean } = {}): Promise<void> {
    await this.start(this.port, options);
  }

  /** A new block at the head (the next number unless given), its header sent to the newHeads subscribers. */
  mine(logs: RawLog[] = [], number = this.head + 1, timestamp = Math.floor(Date.now() / 1000)): number {
    this.setBlock(number, timestamp, logs);
    this.head = number;
    this.minedAt.set(number, performance.now());
    this.announce();
    return number;
  }

  /** Sends the head's header to every newHeads subscriber (after a reorg: the new chain's). */
  announce(): void {
    const result = this.headerAt(this.head);
    for (const [subscription, socket] of this.subscribers)
      socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription, result } }));
  }

  private handleSocket(socket: WebSocket, text: string): void {
    const one = JSON.parse(text) as { id: number; method: string; params?: unknown[] };
    const call = { method: one.method, params: one.params ?? [] };
    this.calls.push(call);
    this.callTimes.push(performance.now());
    let answer: unknown;
    if (one.method === 'eth_subscribe' && (one.params?.[0] as string) === 'newHeads') {
      const id = `0x${(++this.subscriptionSerial).toString(16)}`;
      this.subscribers.set(id, socket);
      answer = { jsonrpc: '2.0', id: one.id, result: id };
    } else if (one.method === 'eth_unsubscribe') {
      answer = { jsonrpc: '2.0', id: one.id, result: this.subscribers.delete(String(one.params?.[0])) };
    } else {
      try {
        answer = { jsonrpc: '2.0', id: one.id, result: this.answer(call, false) };
      } catch (error) {
        const { code, message } = error as { code?: number; message: string };
        answer = { jsonrpc: '2.0', id: one.id, error: { code: code ?? -32000, message } };
      }
    }
    socket.send(JSON.stringify(answer));
  }

  private headerAt(number: number): Record<string, string> {
    const block = this.blocks.get(number);
    return {
      number: hex(number),
      hash: this.hashOf(number),
      parentHash: this.hashOf(number - 1),
      timestamp: hex(block?.timestamp ?? 1_767_556_800 + number * 2),
    };
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as
      | { id: number; method: string; params?: unknown[] }
      | Array<{ id: number; method: string; params?: unknown[] }>;
    const requests = Array.isArray(body) ? body : [body];
    const answers: unknown[] = [];
    for (const one of requests) {
      const call = { method: one.method, params: one.params ?? [] };
      this.calls.push(call);
      this.callTimes.push(performance.now());
      const fault = this.fault(call, this.calls.length);
      if (fault === 'hangup') {
        request.socket.destroy();
        return;
      }
      if (fault === '429') {
        response.writeHead(429, { 'content-type': 'application/json', 'retry-after': this.retryAfter });
        response.end(
          JSON.stringify({ jsonrpc: '2.0', id: one.id, error: { code: -32005, message: 'rate limited' } }).replace(
            '-32005',
            '429',
          ),
        );
        return;
      }
      if (fault === 'slow') await new Promise((resolve) => setTimeout(resolve, this.slowMs));
      if (fault === 'error') {
        answers.push({
          jsonrpc: '2.0',
          id: one.id,
          error: { code: -32000, message: 'internal error: upstream unavailable' },
        });
        continue;
      }
      try {
        answers.push({ jsonrpc: '2.0', id: one.id, result: this.answer(call, fault === 'range') });
      } catch (error) {
        const { code, message } = error as { code?: number; message: string };
        answers.push({ jsonrpc: '2.0', id: one.id, error: { code: code ?? -32000, message } });
      }
    }
    if (response.destroyed) return;
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
  }

  private answer(call: RpcCall, refuseRange: boolean): unknown {
    switch (call.method) {
      case 'eth_chainId':
        return '0x89';
      case 'eth_blockNumber':
        this.head += this.headStep;
        return hex(this.head);
      case 'eth_getBlockByNumber': {
        const tag = call.params[0] as string;
        if (tag === 'finalized' && !this.finalizedTag)
          throw Object.assign(new Error('invalid block tag "finalized"'), { code: -32602 });
        const number =
          tag === 'latest'
            ? this.head
            : tag === 'finalized'
              ? Math.max(0, this.head - (this.finalityDepth ?? Math.max(this.reorgDepth, 1)))
              : Number(BigInt(tag));
        return this.headerAt(number);
      }
      case 'eth_getLogs': {
        const filter = call.params[0] as {
          fromBlock: string;
          toBlock: string;
          address?: string[];
          topics?: string[][];
        };
        const from = Number(BigInt(filter.fromBlock));
        const to = Number(BigInt(filter.toBlock));
        if (refuseRange || to - from + 1 > this.maxRange)
          throw Object.assign(new Error('query returned more than 10000 results'), { code: -32005 });
        const addresses = filter.address ? new Set(filter.address.map((address) => address.toLowerCase())) : null;
        // Each topic position: null (any) or the topics it may be, as eth_getLogs filters them.
        const topicSets = (filter.topics ?? []).map((position) =>
          position ? new Set(position.map((topic) => topic.toLowerCase())) : null,
        );
        const logs: RawLog[] = [];
        for (const number of this.numbersBetween(from, to)) {
          const young = this.head - number < this.reorgDepth && this.forkLogs.has(number);
          if (young) this.servedFork.add(number);
          const blockLogs = young ? this.forkLogs.get(number)! : (this.blocks.get(number)?.logs ?? []);
          // Asked only when a log of the block is served: the hash a log names (a filter matching nothing names none).
          let blockHash: string | undefined | null = null;
          for (const log of blockLogs) {
            if (addresses && !addresses.has(log.address.toLowerCase())) continue;
            if (topicSets.some((set, index) => set !== null && !set.has(log.topics[index]?.toLowerCase() ?? '')))
              continue;
            if (blockHash === null) blockHash = this.logBlockHash(number);
            logs.push(blockHash === undefined ? log : { ...log, blockHash });
          }
        }
        return logs;
      }
      default:
        throw Object.assign(new Error(`method ${call.method} not supported`), { code: -32601 });
    }
  }
}
