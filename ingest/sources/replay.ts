/**
 * Replay and export of topics as newline-delimited JSON files (`.jsonl` or `.jsonl.gz`).
 *
 * File layout: one file per topic, named after the topic's logical name (`fills.archive.jsonl.gz`), one
 * event per line exactly as it travelled on the log. A file of another name may hold envelopes
 * `{"topic": "<logical name>", "event": {...}}`, one per line, for mixed streams.
 *
 * Replay does not judge events: it publishes each line's bytes as they are, so that a bad line meets the
 * same dead-letter path it would have met live. Lines that cannot be attributed to a topic are counted.
 * Files are judged: each is read to its end once before anything of it is published, and one that
 * cannot be read whole (a truncated or corrupt .gz, bytes that are not text, an I/O error) publishes
 * nothing and is returned with its reason, as the importer does.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { once } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import type { EventLog, OutgoingMessage, PartitionSlice } from '../bus/types.ts';
import { TOPICS, TOPIC_IDS, type TopicId, type TopicNames } from '../contract/topics.ts';
import type { EventPublisher } from '../publisher.ts';
import { textGuard, unreadableReason, type FileFailure } from './files.ts';

const FILE_PATTERN = /^(.*)\.jsonl(\.gz)?$/;
const LINES_PER_PUBLISH = 2_000;

export interface ReplayProgress {
  file: string;
  lines: number;
  bytesRead: number;
  bytesTotal: number;
}

export interface ReplayCounts {
  files: number;
  lines: number;
  published: number;
  /** Lines whose topic could not be told (envelope file with a missing or unknown topic). */
  unattributed: number;
  /** Files that could not be read whole: nothing of them was published. */
  failed: FileFailure[];
}

/** Reads a file to its end without publishing: why it cannot be read whole, or undefined when it can. */
async function unreadableFileReason(file: string): Promise<string | undefined> {
  const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
  try {
    if (file.endsWith('.gz')) await pipeline(createReadStream(file), createGunzip(), textGuard(), discard);
    else await pipeline(createReadStream(file), textGuard(), discard);
    return undefined;
  } catch (error) {
    const reason = unreadableReason(error);
    if (reason === undefined) throw error;
    return reason;
  }
}

function topicIdOfLogicalName(name: string): TopicId | undefined {
  return TOPIC_IDS.find((topicId) => TOPICS[topicId].name === name);
}

/** The key an event is published under; a line that does not parse is published without a key. */
function keyOf(topicId: TopicId, line: string): string | null {
  try {
    const parsed = TOPICS[topicId].schema.safeParse(JSON.parse(line));
    if (!parsed.success) return null;
    return (TOPICS[topicId].key as (event: unknown) => string)(parsed.data);
  } catch {
    return null;
  }
}

async function listReplayFiles(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const entry of paths) {
    const info = await stat(entry);
    if (info.isDirectory()) {
      const names = (await readdir(entry)).filter((name) => FILE_PATTERN.test(name)).sort();
      files.push(...names.map((name) => path.join(entry, name)));
    } else {
      files.push(entry);
    }
  }
  return files;
}

export async function replayFiles(
  paths: readonly string[],
  publisher: EventPublisher,
  onProgress?: (progress: ReplayProgress) => void,
): Promise<ReplayCounts> {
  const counts: ReplayCounts = { files: 0, lines: 0, published: 0, unattributed: 0, failed: [] };
  for (const file of await listReplayFiles(paths)) {
    counts.files += 1;
    const unreadable = await unreadableFileReason(file);
    if (unreadable !== undefined) {
      counts.failed.push({ file, reason: unreadable });
      continue;
    }
    const match = FILE_PATTERN.exec(path.basename(file));
    const fileTopic = match ? topicIdOfLogicalName(match[1]!) : undefined;
    const bytesTotal = (await stat(file)).size;
    const raw = createReadStream(file);
    let bytesRead = 0;
    raw.on('data', (chunk) => (bytesRead += chunk.length));
    const input = file.endsWith('.gz') ? raw.pipe(createGunzip()) : raw;
    const pending = new Map<TopicId, OutgoingMessage[]>();
    let lines = 0;

    const flush = async () => {
      for (const [topicId, messages] of pending) {
        await publisher.publishEncoded(topicId, messages);
        counts.published += messages.length;
      }
      pending.clear();
      onProgress?.({ file, lines, bytesRead, bytesTotal });
    };

    const publishLine = async (line: string) => {
      if (line.trim() === '') return;
      lines += 1;
      counts.lines += 1;
      let topicId = fileTopic;
      let value = line;
      if (topicId === undefined) {
        const envelope = parseEnvelope(line);
        topicId = envelope?.topicId;
        value = envelope?.value ?? line;
      }
      if (topicId === undefined) {
        counts.unattributed += 1;
        return;
      }
      let messages = pending.get(topicId);
      if (!messages) pending.set(topicId, (messages = []));
      messages.push({ key: keyOf(topicId, value), value });
      if (lines % LINES_PER_PUBLISH === 0) await flush();
    };

    try {
      for await (const line of createInterface({ input, crlfDelay: Infinity })) await publishLine(line);
    } catch (error) {
      const reason = unreadableReason(error);
      if (reason === undefined) throw error;
      // Only if the file changed since it was read whole: what came before is published.
      counts.failed.push({
        file,
        reason: `${reason} (it changed during the replay: ${lines} lines before this point were published)`,
      });
      continue;
    }
    await flush();
  }
  return counts;
}

function parseEnvelope(line: string): { topicId: TopicId | undefined; value: string } | undefined {
  try {
    const envelope = JSON.parse(line) as { topic?: unknown; event?: unknown };
    if (typeof envelope.topic !== 'string' || envelope.event === undefined) return undefined;
    return { topicId: topicIdOfLogicalName(envelope.topic), value: JSON.stringify(envelope.event) };
  } catch {
    return undefined;
  }
}

export interface ExportCounts {
  files: number;
  events: number;
}

/**
 * Writes every message of our topics, from the beginning up to the end offsets observed at the start,
 * to `<directory>/<topic>.jsonl.gz`. Uses a fresh consumer group, so it disturbs no worker.
 */
export async function exportTopics(
  eventLog: EventLog,
  topics: TopicNames,
  directory: string,
  options: { gzip: boolean; onProgress?: (events: number) => void },
): Promise<ExportCounts> {
  await mkdir(directory, { recursive: true });
  const physical = topics.all();
  const ends = await eventLog.endOffsets(physical);
  const remaining = new Map<string, bigint>();
  for (const [topic, partitions] of ends) {
    for (const [partition, end] of partitions) if (end > 0n) remaining.set(`${topic}|${partition}`, end);
  }

  const writers = new Map<string, { stream: PassThrough; done: Promise<void> }>();
  const writerFor = (topic: string) => {
    let writer = writers.get(topic);
    if (!writer) {
      const topicId = topics.idOf(topic)!;
      const file = path.join(directory, `${TOPICS[topicId].name}.jsonl${options.gzip ? '.gz' : ''}`);
      const stream = new PassThrough();
      const done = options.gzip
        ? pipeline(stream, createGzip(), createWriteStream(file))
        : pipeline(stream, createWriteStream(file));
      writer = { stream, done };
      writers.set(topic, writer);
    }
    return writer;
  };

  let events = 0;
  let finished: () => void = () => {};
  const allRead = new Promise<void>((resolve) => (finished = resolve));
  if (remaining.size === 0) finished();

  const consumer = eventLog.consumer({
    groupId: `export-${process.pid}-${Date.now()}`,
    fromBeginning: true,
    maxBytesPerPartition: 4 * 1024 * 1024,
    maxBytes: 16 * 1024 * 1024,
    partitionsConsumedConcurrently: 1,
    maxBatchMessages: 10_000,
    maxBatchBytes: 8 * 1024 * 1024,
    lingerMs: 50,
  });
  await consumer.start(physical, {
    prepare: (slice: PartitionSlice) => slice,
    write: async (slices: PartitionSlice[]) => {
      for (const slice of slices) {
        const key = `${slice.topic}|${slice.partition}`;
        const end = remaining.get(key);
        if (end === undefined) continue;
        const stream = writerFor(slice.topic).stream;
        for (const message of slice.messages) {
          if (BigInt(message.offset) >= end) break;
          if (message.value === null) continue;
          // Respect the file's pace: wait for the gzip stream to drain instead of buffering the topic.
          if (!stream.write(`${normalizeLine(message.value.toString('utf8'))}\n`)) await once(stream, 'drain');
          events += 1;
        }
        if (BigInt(slice.messages[slice.messages.length - 1]!.offset) + 1n >= end) {
          remaining.delete(key);
          if (remaining.size === 0) finished();
        }
      }
      options.onProgress?.(events);
    },
  });
  await allRead;
  await consumer.stop();
  for (const writer of writers.values()) writer.stream.end();
  await Promise.all([...writers.values()].map((writer) => writer.done));
  return { files: writers.size, events };
}

/** One event per line: a value that spans lines (pretty-printed JSON) is re-serialized on one line. */
function normalizeLine(value: string): string {
  if (!value.includes('\n')) return value;
  try {
    return JSON.stringify(JSON.parse(value));
  } catch {
    return value.replace(/\r?\n/g, ' ');
  }
}
